package admin

import (
	"regexp"
	"strings"
	"testing"

	"github.com/google/uuid"
)

func TestDomains(t *testing.T) {
	env := serveAPI(t, nil)
	_, memberKey := env.member(t, "member@example.com", levelMember, "organization:write")
	otherOrg, outsiderKey := env.addUser(t, "outsider@example.com", uuid.Nil, levelOwner, "*")
	domains := "/api/organizations/{org}/domains/"

	created := env.must(t, 201, "POST", env.orgPath("domains/"), env.owner, `{"domain":"zeta.example.com","saml_entity_id":"https://idp"}`)
	id := created["id"].(string)
	if !regexp.MustCompile(`^[0-9A-Za-z_-]{43}$`).MatchString(created["verification_challenge"].(string)) ||
		created["is_verified"] != false || created["verified_at"] != nil || created["has_saml"] != false ||
		created["jit_provisioning_enabled"] != false || created["sso_enforcement"] != "" {
		t.Fatalf("created %v", created)
	}
	env.must(t, 201, "POST", env.orgPath("domains/"), env.owner, `{"domain":"alpha.example.com"}`)
	theirs := env.must(t, 201, "POST", "/api/organizations/"+otherOrg.String()+"/domains/", outsiderKey, `{"domain":"other.example.com"}`)["id"].(string)
	notFound := []string{`{"type":"invalid_request","code":"not_found","detail":"Not found.","attr":null}`}

	_, _, list := env.call(t, "GET", env.orgPath("domains/"), memberKey, "")
	inOrder(t, list, `"domain":"alpha.example.com"`, `"domain":"zeta.example.com"`)
	env.run(t, []scenario{
		{name: "list, by name", method: "GET", path: domains, key: memberKey, status: 200,
			want: []string{`"count":2`, `"results":[{"id":"`, `"domain":"alpha.example.com"`}, notWant: []string{"other.example.com"}},
		{name: "retrieve", method: "GET", path: domains + id + "/", key: memberKey, status: 200,
			want: []string{`"domain":"zeta.example.com"`, `"saml_entity_id":"https://idp"`, `"saml_acs_url":null`}},
		{name: "another organization's domain", method: "GET", path: "/api/organizations/" + otherOrg.String() + "/domains/", key: env.owner, status: 404},
		// Another organization's domain id under one's own organization is not found,
		// whatever the method.
		{name: "their domain under our path", method: "GET", path: domains + theirs + "/", key: env.owner, status: 404, want: notFound},
		{name: "their domain cannot be changed", method: "PATCH", path: domains + theirs + "/", key: env.owner, body: `{"saml_entity_id":"x"}`,
			status: 404, want: notFound},
		{name: "their domain cannot be deleted", method: "DELETE", path: domains + theirs + "/", key: env.owner, status: 404, want: notFound},
		{name: "their domain cannot be verified", method: "POST", path: domains + theirs + "/verify/", key: env.owner, status: 404, want: notFound},
		{name: "their domain is untouched", method: "GET", path: "/api/organizations/" + otherOrg.String() + "/domains/" + theirs + "/",
			key: outsiderKey, status: 200, want: []string{`"domain":"other.example.com"`, `"saml_entity_id":null`}},
		{name: "unique across the instance", method: "POST", path: domains, key: env.owner, body: `{"domain":"other.example.com"}`, status: 400,
			want: []string{`{"type":"validation_error","code":"unique","detail":"domain with this domain already exists.","attr":"domain"}`}},
		{name: "domain required", method: "POST", path: domains, key: env.owner, body: `{}`, status: 400,
			want: []string{`"code":"required"`, `"attr":"domain"`}},
		{name: "a domain name", method: "POST", path: domains, key: env.owner, body: `{"domain":"https://example.com"}`, status: 400,
			want: []string{`{"type":"validation_error","code":"invalid_input","detail":"Please enter a valid domain or subdomain name.","attr":"domain"}`}},
		{name: "lower case", method: "POST", path: domains, key: env.owner, body: `{"domain":"Example.com"}`, status: 400, want: []string{`"attr":"domain"`}},
		{name: "members do not claim domains", method: "POST", path: domains, key: memberKey, body: `{"domain":"m.example.com"}`, status: 403,
			want: []string{`{"type":"authentication_error","code":"permission_denied","detail":"Your organization access level is insufficient.","attr":null}`}},
		{name: "JIT provisioning needs a verified domain", method: "POST", path: domains, key: env.owner,
			body: `{"domain":"jit.example.com","jit_provisioning_enabled":true}`, status: 400,
			want: []string{`{"type":"validation_error","code":"verification_required","detail":"This attribute cannot be updated until the domain is verified.","attr":"jit_provisioning_enabled"}`}},
		{name: "so does SSO enforcement", method: "PATCH", path: domains + id + "/", key: env.owner, body: `{"sso_enforcement":"google-oauth2"}`,
			status: 400, want: []string{`"code":"verification_required"`, `"attr":"sso_enforcement"`}},
		{name: "turning them off needs nothing", method: "PATCH", path: domains + id + "/", key: env.owner,
			body: `{"sso_enforcement":"","jit_provisioning_enabled":false}`, status: 200},
		{name: "any SSO provider needs a verified domain", method: "PATCH", path: domains + id + "/", key: env.owner, body: `{"sso_enforcement":"okta"}`,
			status: 400, want: []string{`"code":"verification_required"`, `"attr":"sso_enforcement"`}},
		{name: "has_saml when all three SAML fields are set", method: "PATCH", path: domains + id + "/", key: env.owner,
			body: `{"saml_acs_url":"https://acs","saml_x509_cert":"-----BEGIN CERTIFICATE-----","domain":"renamed.example.com"}`, status: 200,
			want: []string{`"has_saml":true`, `"domain":"zeta.example.com"`, `"saml_entity_id":"https://idp"`}},
		{name: "and not when one is cleared", method: "PATCH", path: domains + id + "/", key: env.owner, body: `{"saml_x509_cert":null}`,
			status: 200, want: []string{`"has_saml":false`, `"saml_x509_cert":null`}},
		{name: "SAML fields at most 512", method: "PATCH", path: domains + id + "/", key: env.owner,
			body: `{"saml_entity_id":"` + strings.Repeat("x", 513) + `"}`, status: 400, want: []string{`"attr":"saml_entity_id"`}},
		{name: "members do not change domains", method: "PATCH", path: domains + id + "/", key: memberKey, body: `{"saml_entity_id":"x"}`, status: 403},
		{name: "members do not delete domains", method: "DELETE", path: domains + id + "/", key: memberKey, status: 403},
		{name: "no such domain", method: "DELETE", path: domains + uuid.NewString() + "/", key: env.owner, status: 404},
		{name: "delete", method: "DELETE", path: domains + id + "/", key: env.owner, status: 204},
		{name: "deleted", method: "GET", path: domains + id + "/", key: env.owner, status: 404},
		{name: "and free to claim again", method: "POST", path: domains, key: env.owner, body: `{"domain":"zeta.example.com"}`, status: 201},
	})
}

// Verification asks a real DNS server (miekg/dns on loopback) for the challenge.
func TestDomainVerify(t *testing.T) {
	dnsAddr, zone := startDNS(t)
	env := serveAPI(t, func(cfg *Config) { cfg.DNSServer = dnsAddr })
	_, memberKey := env.member(t, "member@example.com", levelMember, "organization:write")
	_, readKey := env.member(t, "reader@example.com", levelOwner, "organization:read")
	created := env.must(t, 201, "POST", env.orgPath("domains/"), env.owner, `{"domain":"acme.example.com"}`)
	id, challenge := created["id"].(string), created["verification_challenge"].(string)
	domain := "/api/organizations/{org}/domains/" + id + "/"
	verify := domain + "verify/"

	env.run(t, []scenario{
		{name: "verify needs organization:write", method: "POST", path: verify, key: readKey, status: 403,
			want: []string{`API key missing required scope 'organization:write'`}},
		{name: "and an admin", method: "POST", path: verify, key: memberKey, status: 403,
			want: []string{`"detail":"Your organization access level is insufficient."`}},
		{name: "no record: 200, no body", method: "POST", path: verify, key: env.owner, status: 200},
		{name: "still unverified", method: "GET", path: domain, key: env.owner, status: 200,
			want: []string{`"is_verified":false`, `"verified_at":null`}},
	})
	zone.set("_posthog-challenge.acme.example.com", "something else")
	env.run(t, []scenario{
		{name: "a wrong record: 200", method: "POST", path: verify, key: env.owner, status: 200},
		{name: "still unverified after a wrong record", method: "GET", path: domain, key: env.owner, status: 200, want: []string{`"is_verified":false`}},
	})
	zone.set("_posthog-challenge.acme.example.com", "v=spf1 -all", challenge)
	if status, _, text := env.call(t, "POST", env.orgPath("domains/"+id+"/verify/"), env.owner, `{"domain":"ignored.example.com"}`); status != 200 || text != "" {
		t.Fatalf("verify answers 200 with no body: %d %q", status, text)
	}
	env.run(t, []scenario{
		{name: "verified", method: "GET", path: domain, key: env.owner, status: 200,
			want: []string{`"domain":"acme.example.com"`, `"is_verified":true`, `"verified_at":"`}},
		{name: "verifying again", method: "POST", path: verify, key: env.owner, status: 400,
			want: []string{`{"type":"validation_error","code":"already_verified","detail":"This domain has already been verified.","attr":null}`}},
		{name: "SSO enforcement once verified", method: "PATCH", path: domain, key: env.owner,
			body: `{"sso_enforcement":"saml","jit_provisioning_enabled":true}`, status: 200,
			want: []string{`"sso_enforcement":"saml"`, `"jit_provisioning_enabled":true`}},
		// PostHog's serializer does not check the provider, only the length.
		{name: "any provider name", method: "PATCH", path: domain, key: env.owner, body: `{"sso_enforcement":"okta"}`, status: 200,
			want: []string{`"sso_enforcement":"okta"`}},
		{name: "of 28 characters at most", method: "PATCH", path: domain, key: env.owner,
			body: `{"sso_enforcement":"` + strings.Repeat("s", 29) + `"}`, status: 400,
			want: []string{`{"type":"validation_error","code":"max_length","detail":"Ensure this field has no more than 28 characters.","attr":"sso_enforcement"}`}},
	})
}
