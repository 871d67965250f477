package admin

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/hedge-analytics/hedge/internal/records"
)

// challengePrefix is where verify looks for a domain's challenge: the TXT record
// _posthog-challenge.<domain>, the name PostHog's instructions give.
const challengePrefix = "_posthog-challenge."

// dnsTimeout bounds one verification lookup.
const dnsTimeout = 10 * time.Second

// bindDomains registers the domain routes; dnsServer (host[:port]) is where verify
// sends its TXT lookup, the system resolver when empty.
func (a *API) bindDomains(dnsServer string) {
	resolver := newResolver(dnsServer)
	a.handle(fiber.MethodGet, "/organizations/:organization_id/domains/", "organization:read", a.domainList)
	a.handle(fiber.MethodPost, "/organizations/:organization_id/domains/", "organization:write", a.domainCreate)
	a.handle(fiber.MethodGet, "/organizations/:organization_id/domains/:id/", "organization:read", a.domainRetrieve)
	a.handle(fiber.MethodPatch, "/organizations/:organization_id/domains/:id/", "organization:write", a.domainUpdate)
	a.handle(fiber.MethodDelete, "/organizations/:organization_id/domains/:id/", "organization:write", a.domainDelete)
	// PostHog documents no scope for verify; it changes the domain, so organization:write.
	a.handle(fiber.MethodPost, "/organizations/:organization_id/domains/:id/verify/", "organization:write",
		func(c *fiber.Ctx) error { return a.domainVerify(c, resolver) })
}

// newResolver is a DNS resolver that asks server (host or host:port, port 53 by
// default), or the system's resolver when server is empty.
func newResolver(server string) *net.Resolver {
	if server == "" {
		return net.DefaultResolver
	}
	if _, _, err := net.SplitHostPort(server); err != nil {
		server = net.JoinHostPort(server, "53")
	}
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, server)
		},
	}
}

// domainRecord is the OpenAPI schema's Domain.
type domainRecord struct {
	ID                     string     `json:"id"`
	Domain                 string     `json:"domain"`
	IsVerified             bool       `json:"is_verified"`
	VerifiedAt             *time.Time `json:"verified_at"`
	VerificationChallenge  string     `json:"verification_challenge"`
	JITProvisioningEnabled bool       `json:"jit_provisioning_enabled"`
	SSOEnforcement         string     `json:"sso_enforcement"`
	HasSAML                bool       `json:"has_saml"`
	SAMLEntityID           *string    `json:"saml_entity_id"`
	SAMLACSURL             *string    `json:"saml_acs_url"`
	SAMLX509Cert           *string    `json:"saml_x509_cert"`
}

const domainColumns = `SELECT id::VARCHAR, domain, verified_at, verification_challenge, jit_provisioning_enabled,
	sso_enforcement, saml_entity_id, saml_acs_url, saml_x509_cert FROM meta.domains`

func scanDomain(row records.Scanner) (domainRecord, error) {
	var r domainRecord
	err := row.Scan(&r.ID, &r.Domain, &r.VerifiedAt, &r.VerificationChallenge, &r.JITProvisioningEnabled,
		&r.SSOEnforcement, &r.SAMLEntityID, &r.SAMLACSURL, &r.SAMLX509Cert)
	r.VerifiedAt = utcTime(r.VerifiedAt)
	r.IsVerified = r.VerifiedAt != nil
	nonEmpty := func(s *string) bool { return s != nil && *s != "" }
	r.HasSAML = nonEmpty(r.SAMLEntityID) && nonEmpty(r.SAMLACSURL) && nonEmpty(r.SAMLX509Cert)
	return r, err
}

// domainInput is the body of POST and PATCH: PATCH changes only what is sent, and
// ignores domain (read-only once created, as in PostHog).
type domainInput struct {
	Domain                 optional[string]  `json:"domain"`
	JITProvisioningEnabled optional[bool]    `json:"jit_provisioning_enabled"`
	SSOEnforcement         optional[string]  `json:"sso_enforcement"`
	SAMLEntityID           optional[*string] `json:"saml_entity_id"`
	SAMLACSURL             optional[*string] `json:"saml_acs_url"`
	SAMLX509Cert           optional[*string] `json:"saml_x509_cert"`
}

var domainPattern = regexp.MustCompile(`^([a-z0-9]+(-[a-z0-9]+)*\.)+[a-z]{2,}$`)

// maxSSOEnforcement is the length of PostHog's sso_enforcement column. Its meaningful
// values are "" (off), google-oauth2, github, gitlab and saml, but PostHog's
// serializer does not check them, so neither does hedge, which has no
// login to enforce them on and keeps the value for PostHog's clients.
const maxSSOEnforcement = 28

// apply validates the input and applies it to r, the domain as it is (a new one when
// creating). SSO enforcement and JIT provisioning need a verified domain.
func (in *domainInput) apply(r *domainRecord, creating bool) error {
	if creating {
		switch {
		case !in.Domain.Set || in.Domain.Null:
			return errRequired("domain")
		case !domainPattern.MatchString(in.Domain.Value):
			return errValidation("domain", "invalid_input", "Please enter a valid domain or subdomain name.")
		}
		r.Domain = in.Domain.Value
	}
	if in.JITProvisioningEnabled.Set && !in.JITProvisioningEnabled.Null {
		r.JITProvisioningEnabled = in.JITProvisioningEnabled.Value
		if r.JITProvisioningEnabled && !r.IsVerified {
			return errValidation("jit_provisioning_enabled", "verification_required", "This attribute cannot be updated until the domain is verified.")
		}
	}
	if in.SSOEnforcement.Set && !in.SSOEnforcement.Null {
		r.SSOEnforcement = in.SSOEnforcement.Value
		if utf8.RuneCountInString(r.SSOEnforcement) > maxSSOEnforcement {
			return errMaxLength("sso_enforcement", maxSSOEnforcement)
		}
		if r.SSOEnforcement != "" && !r.IsVerified {
			return errValidation("sso_enforcement", "verification_required", "This attribute cannot be updated until the domain is verified.")
		}
	}
	for _, f := range []struct {
		attr  string
		in    optional[*string]
		field **string
		limit int
	}{
		{"saml_entity_id", in.SAMLEntityID, &r.SAMLEntityID, 512},
		{"saml_acs_url", in.SAMLACSURL, &r.SAMLACSURL, 512},
		{"saml_x509_cert", in.SAMLX509Cert, &r.SAMLX509Cert, 0},
	} {
		if !f.in.Set {
			continue
		}
		*f.field = f.in.Value // nil when null
		if f.limit > 0 && f.in.Value != nil && utf8.RuneCountInString(*f.in.Value) > f.limit {
			return errMaxLength(f.attr, f.limit)
		}
	}
	return nil
}

// GET /api/organizations/{organization_id}/domains/ (organization:read)
// The organization's domains by name.
func (a *API) domainList(c *fiber.Ctx) error {
	p := principalOf(c)
	m, err := a.organizationWide(c, p)
	if err != nil {
		return err
	}
	return listPage(c, a, listQuery[domainRecord]{
		what:  fmt.Sprintf("domains of %s", m.organizationID),
		count: `SELECT count(*) FROM meta.domains WHERE organization_id = ?`,
		list:  domainColumns + ` WHERE organization_id = ? ORDER BY domain`,
		args:  []any{m.organizationID},
		scan:  scanDomain,
	})
}

// newChallenge is PostHog's secrets.token_urlsafe(32): 43 characters of [A-Za-z0-9_-].
func newChallenge() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// domainTaken reports whether any organization of the instance has claimed domain.
func domainTaken(ctx context.Context, q querier, domain string) (bool, error) {
	var taken bool
	if err := q.QueryRowContext(ctx, `SELECT count(*) > 0 FROM meta.domains WHERE domain = ?`, domain).Scan(&taken); err != nil {
		return false, fmt.Errorf("cannot look up domain %s: %w", domain, err)
	}
	return taken, nil
}

// POST /api/organizations/{organization_id}/domains/ (organization:write)
// Admins and owners claim a domain, unique across the instance, with a new
// verification challenge.
func (a *API) domainCreate(c *fiber.Ctx) error {
	p := principalOf(c)
	m, err := a.organizationWide(c, p)
	if err != nil {
		return err
	}
	if err := m.atLeast(levelAdmin); err != nil {
		return err
	}
	var in domainInput
	if err := bindBody(c, &in); err != nil {
		return err
	}
	r := domainRecord{ID: uuid.Must(uuid.NewV7()).String(), VerificationChallenge: newChallenge()}
	if err := in.apply(&r, true); err != nil {
		return err
	}
	ctx := c.UserContext()
	errTaken := errValidation("domain", "unique", "domain with this domain already exists.")
	taken, err := domainTaken(ctx, a.db, r.Domain)
	if err != nil {
		return err
	}
	if taken {
		return errTaken
	}
	if _, err := a.db.ExecContext(ctx, `
		INSERT INTO meta.domains (id, organization_id, domain, verification_challenge, jit_provisioning_enabled,
			sso_enforcement, saml_entity_id, saml_acs_url, saml_x509_cert, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, now())`,
		r.ID, m.organizationID, r.Domain, r.VerificationChallenge, r.JITProvisioningEnabled, r.SSOEnforcement,
		r.SAMLEntityID, r.SAMLACSURL, r.SAMLX509Cert); err != nil {
		// Two requests for the same domain at once: the unique index turned one away.
		if taken, _ := domainTaken(ctx, a.db, r.Domain); taken {
			return errTaken
		}
		return fmt.Errorf("cannot create domain %s: %w", r.Domain, err)
	}
	r, err = a.loadDomain(ctx, m, r.ID)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(r)
}

// domainOfPath is the domain the path names, for a member of its organization at
// level or above.
func (a *API) domainOfPath(c *fiber.Ctx, level int) (membership, domainRecord, error) {
	m, err := a.organizationWide(c, principalOf(c))
	if err != nil {
		return m, domainRecord{}, err
	}
	if err := m.atLeast(level); err != nil {
		return m, domainRecord{}, err
	}
	r, err := a.loadDomain(c.UserContext(), m, c.Params("id"))
	return m, r, err
}

// loadDomain reads a domain of m's organization; another organization's is not found.
func (a *API) loadDomain(ctx context.Context, m membership, id string) (domainRecord, error) {
	parsed, err := uuid.Parse(id)
	if err != nil {
		return domainRecord{}, errRecordNotFound()
	}
	r, err := scanDomain(a.db.QueryRowContext(ctx, domainColumns+` WHERE id = ? AND organization_id = ?`, parsed, m.organizationID))
	if errors.Is(err, sql.ErrNoRows) {
		return r, errRecordNotFound()
	}
	if err != nil {
		return r, fmt.Errorf("cannot read domain %s: %w", id, err)
	}
	return r, nil
}

// GET /api/organizations/{organization_id}/domains/{id}/ (organization:read)
func (a *API) domainRetrieve(c *fiber.Ctx) error {
	_, r, err := a.domainOfPath(c, levelMember)
	if err != nil {
		return err
	}
	return c.JSON(r)
}

// PATCH /api/organizations/{organization_id}/domains/{id}/ (organization:write)
func (a *API) domainUpdate(c *fiber.Ctx) error {
	m, r, err := a.domainOfPath(c, levelAdmin)
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	var in domainInput
	if err := bindBody(c, &in); err != nil {
		return err
	}
	if err := in.apply(&r, false); err != nil {
		return err
	}
	if _, err := a.db.ExecContext(ctx, `UPDATE meta.domains SET jit_provisioning_enabled = ?, sso_enforcement = ?,
		saml_entity_id = ?, saml_acs_url = ?, saml_x509_cert = ? WHERE id = ?`,
		r.JITProvisioningEnabled, r.SSOEnforcement, r.SAMLEntityID, r.SAMLACSURL, r.SAMLX509Cert, r.ID); err != nil {
		return fmt.Errorf("cannot update domain %s: %w", r.Domain, err)
	}
	if r, err = a.loadDomain(ctx, m, r.ID); err != nil {
		return err
	}
	return c.JSON(r)
}

// DELETE /api/organizations/{organization_id}/domains/{id}/ (organization:write)
func (a *API) domainDelete(c *fiber.Ctx) error {
	_, r, err := a.domainOfPath(c, levelAdmin)
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	if _, err := a.db.ExecContext(ctx, `DELETE FROM meta.domains WHERE id = ?`, r.ID); err != nil {
		return fmt.Errorf("cannot delete domain %s: %w", r.Domain, err)
	}
	return c.SendStatus(fiber.StatusNoContent)
}

// POST /api/organizations/{organization_id}/domains/{id}/verify/ (organization:write)
// Looks up the TXT record _posthog-challenge.<domain>: a record equal to the
// challenge verifies the domain. Either way the answer is 200 with no body, as PostHog's;
// a failed lookup leaves the domain unverified and records the attempt.
func (a *API) domainVerify(c *fiber.Ctx, resolver *net.Resolver) error {
	_, r, err := a.domainOfPath(c, levelAdmin)
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	if r.IsVerified {
		return errValidation("", "already_verified", "This domain has already been verified.")
	}
	lookup, cancel := context.WithTimeout(ctx, dnsTimeout)
	defer cancel()
	records, err := resolver.LookupTXT(lookup, challengePrefix+r.Domain)
	var dnsErr *net.DNSError
	if err != nil && !(errors.As(err, &dnsErr) && dnsErr.IsNotFound) {
		// Not "no such record": the resolver could not answer. Still a failed
		// verification for the caller, but worth a line in the log.
		a.log.Warn("cannot look up a domain's challenge", "domain", r.Domain, "err", err)
	}
	verified := slices.ContainsFunc(records, func(txt string) bool { return strings.TrimSpace(txt) == r.VerificationChallenge })
	query := `UPDATE meta.domains SET last_verification_retry = now() WHERE id = ?`
	if verified {
		query = `UPDATE meta.domains SET verified_at = now(), last_verification_retry = NULL WHERE id = ?`
	}
	if _, err := a.db.ExecContext(ctx, query, r.ID); err != nil {
		return fmt.Errorf("cannot record the verification of domain %s: %w", r.Domain, err)
	}
	c.Status(fiber.StatusOK)
	return nil
}
