package admin

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	lru "github.com/hashicorp/golang-lru/v2"
)

// Signing in, as PostHog's web app does: e-mail and password give a session, held in an
// HttpOnly cookie, which then authenticates the API like a personal key with scope "*"
// (bounded, as a key is, by the user's memberships). A request with a personal API key
// is authenticated by the key alone, as before, and needs no CSRF token.
//
// A session-authenticated request that may change something (any method but GET, HEAD
// and OPTIONS) must carry the session's CSRF token in X-CSRFToken (PostHog's header),
// and must come from the console's own origin: a browser's Sec-Fetch-Site, when sent,
// must be same-origin or none, and an Origin, when sent, must name the request's own
// host (the rule of Go's net/http CrossOriginProtection). Sign-in itself gets the
// origin check, so no other site can sign a browser in to an account of its choosing.

const (
	sessionCookie = "hedge_session"
	csrfCookie    = "hedge_csrftoken"
	csrfHeader    = "X-CSRFToken"
	// sessionLifetime is how long a session lasts from sign-in (PostHog's and
	// Metabase's 14 days); signing out or changing the password ends it sooner.
	sessionLifetime = 14 * 24 * time.Hour
	// lastSeenEvery is how stale a session's last_seen_at may get: a request writes it
	// only when it is older, not on every request.
	lastSeenEvery = 5 * time.Minute
	// maxSessionsPerUser bounds a user's live sessions: signing in past it ends the
	// oldest, so sign-ins in a loop cannot grow the table.
	maxSessionsPerUser = 50
)

// Sign-in limits, in memory: they hold for this process, which is all of hedge. An
// attempt is counted against three budgets before its password is hashed, so that an
// attempt past any of them costs no hash:
//   - its client's address (clientAddress; an IPv6 address counts as its /64, which one
//     host holds whole): maxSignInsPerMinute attempts a minute, whatever the e-mails;
//   - the e-mail from that address: maxFailures failures lock the pair out for lockout,
//     right password or not;
//   - the e-mail from every address together, against a guesser spread over many:
//     accountBurst attempts, then one every accountRefill (429 with Retry-After past
//     it). An attempt holds its share until it has succeeded, so concurrent attempts
//     cannot all pass before the first failure counts. An address that signed the
//     e-mail in within knownFor is spared this budget: a guesser elsewhere can slow the
//     owner's sign-ins from a new address to one a minute, but cannot lock them out
//     where they signed in before (the pair's budget still bounds that address).
//
// A password change's current_password is counted as a sign-in of the user's e-mail.
const (
	maxFailures = 10
	lockout     = 15 * time.Minute
	// maxSignInsPerMinute bounds the sign-in attempts of one address, whatever the
	// e-mails.
	maxSignInsPerMinute = 30
	accountBurst        = 20
	accountRefill       = time.Minute
	knownFor            = 30 * 24 * time.Hour
	// limiterEntries bounds each table of the limiter. Past it the oldest entries are
	// forgotten: a client spreading over more addresses than that gets through more
	// attempts, each still bounded by its e-mail's budget.
	limiterEntries = 10_000
)

// signInLimiter holds the budgets of sign-in attempts. The e-mails of users and the
// made-up ones have budgets in tables of their own, kept alike (an answer never tells
// them apart), so that a flood of made-up e-mails cannot push a user's out.
type signInLimiter struct {
	mu       sync.Mutex
	attempts *lru.Cache[string, *minuteCount] // by address
	failures *lru.Cache[[2]string, *failures] // by e-mail and address
	users    *lru.Cache[string, *bucket]      // by e-mail of a user
	made     *lru.Cache[string, *bucket]      // by e-mail of no user
	known    *lru.Cache[[2]string, time.Time] // the last success of an e-mail from an address
}

type failures struct {
	count       int
	lockedUntil time.Time
}

type minuteCount struct {
	minute time.Time
	count  int
}

// bucket is a token bucket of accountBurst tokens, one back every accountRefill.
type bucket struct {
	tokens float64
	at     time.Time
}

// take takes a token at now, or says how long until there is one.
func (b *bucket) take(now time.Time) (wait time.Duration, ok bool) {
	if elapsed := now.Sub(b.at); elapsed > 0 {
		b.tokens = min(accountBurst, b.tokens+float64(elapsed)/float64(accountRefill))
		b.at = now
	}
	if b.tokens < 1 {
		return time.Duration((1 - b.tokens) * float64(accountRefill)), false
	}
	b.tokens--
	return 0, true
}

func newSignInLimiter() *signInLimiter {
	a, _ := lru.New[string, *minuteCount](limiterEntries)
	f, _ := lru.New[[2]string, *failures](limiterEntries)
	u, _ := lru.New[string, *bucket](limiterEntries)
	m, _ := lru.New[string, *bucket](limiterEntries)
	k, _ := lru.New[[2]string, time.Time](limiterEntries)
	return &signInLimiter{attempts: a, failures: f, users: u, made: m, known: k}
}

// addressKey is the address whose budget an attempt from ip counts against: an IPv4
// address, or the /64 of an IPv6 one.
func addressKey(ip string) string {
	addr, err := netip.ParseAddr(ip)
	if err != nil {
		return ip
	}
	if addr = addr.Unmap(); addr.Is6() {
		return netip.PrefixFrom(addr.WithZone(""), 64).Masked().String()
	}
	return addr.String()
}

// signInAttempt is an admitted attempt, whose outcome is reported to its limiter.
type signInAttempt struct {
	pair    [2]string // e-mail, address
	budget  *bucket   // the e-mail's, when the attempt holds a token of it
	limiter *signInLimiter
}

// admit counts an attempt on email from the client address ip at now, of a user's
// e-mail if user, and refuses it when the address made too many this minute or the
// e-mail's budget is spent (errThrottled), or the pair is locked out (errLockedOut).
// An admitted attempt must be reported: failed, succeeded or abandoned.
func (l *signInLimiter) admit(email, ip string, user bool, now time.Time) (*signInAttempt, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := &signInAttempt{pair: [2]string{email, addressKey(ip)}, limiter: l}
	minute := now.Truncate(time.Minute)
	a, ok := l.attempts.Get(t.pair[1])
	if !ok || !a.minute.Equal(minute) {
		a = &minuteCount{minute: minute}
		l.attempts.Add(t.pair[1], a)
	}
	if a.count++; a.count > maxSignInsPerMinute {
		return nil, errThrottled(minute.Add(time.Minute).Sub(now))
	}
	if f, ok := l.failures.Get(t.pair); ok && now.Before(f.lockedUntil) {
		return nil, errLockedOut()
	}
	if at, ok := l.known.Get(t.pair); ok && now.Sub(at) < knownFor {
		return t, nil
	}
	table := l.made
	if user {
		table = l.users
	}
	b, ok := table.Get(email)
	if !ok {
		b = &bucket{tokens: accountBurst, at: now}
		table.Add(email, b)
	}
	wait, ok := b.take(now)
	if !ok {
		return nil, errThrottled(wait)
	}
	t.budget = b
	return t, nil
}

// failed counts a failed attempt of the pair, and locks it out at maxFailures.
func (t *signInAttempt) failed(now time.Time) {
	l := t.limiter
	l.mu.Lock()
	defer l.mu.Unlock()
	f, ok := l.failures.Get(t.pair)
	if !ok {
		f = &failures{}
		l.failures.Add(t.pair, f)
	}
	if f.count++; f.count >= maxFailures {
		f.count, f.lockedUntil = 0, now.Add(lockout)
	}
}

// succeeded forgets the pair's failures, gives the e-mail back the token the attempt
// held, and spares the address the e-mail's budget from now on.
func (t *signInAttempt) succeeded(now time.Time) {
	t.abandoned()
	l := t.limiter
	l.mu.Lock()
	defer l.mu.Unlock()
	l.failures.Remove(t.pair)
	l.known.Add(t.pair, now)
}

// abandoned gives back the token of an attempt that tried no password (no hashing
// slot was free).
func (t *signInAttempt) abandoned() {
	l := t.limiter
	l.mu.Lock()
	defer l.mu.Unlock()
	if t.budget != nil {
		t.budget.tokens = min(accountBurst, t.budget.tokens+1)
		t.budget = nil
	}
}

func errInvalidCredentials() *Error {
	return &Error{Status: fiber.StatusBadRequest, Type: "validation_error", Code: "invalid_credentials", Detail: "Invalid email or password."}
}

func errLockedOut() *Error {
	return &Error{Status: fiber.StatusForbidden, Type: "authentication_error", Code: "too_many_failed_attempts",
		Detail: fmt.Sprintf("Too many failed login attempts. Try again in %d minutes.", int(lockout.Minutes()))}
}

// errThrottled is DRF's 429, for a request that may come again after wait.
func errThrottled(wait time.Duration) *Error {
	seconds := int(math.Ceil(wait.Seconds()))
	return &Error{Status: fiber.StatusTooManyRequests, Type: "throttled_error", Code: "throttled", RetryAfter: seconds,
		Detail: fmt.Sprintf("Request was throttled. Expected available in %d seconds.", seconds)}
}

// errCSRF is Django's refusal of a request that failed the CSRF checks, as PostHog's API
// answers it.
func errCSRF(reason string) *Error {
	return errPermissionDenied("CSRF Failed: " + reason)
}

func (a *API) bindSessions() {
	a.api.Post("/login/", a.login)
	a.api.Post("/logout/", a.logout)
}

// signInInput is the body of POST /api/login/.
type signInInput struct {
	Email    string `json:"email"`
	Password string `json:"password"`
}

// POST /api/login/ {email, password}
// Signs in: 200 {"success": true} with the session and CSRF cookies. A wrong password
// and an unknown e-mail get the same 400, in about the same time (a hash is computed
// either way); a user without a password signs in with neither.
func (a *API) login(c *fiber.Ctx) error {
	if err := checkOrigin(c); err != nil {
		return err
	}
	var in signInInput
	if err := bindBody(c, &in); err != nil {
		return err
	}
	email := strings.ToLower(strings.TrimSpace(in.Email))
	switch {
	case email == "":
		return errRequired("email")
	case in.Password == "":
		return errRequired("password")
	case len(in.Password) > 4*maxPasswordLength:
		return errInvalidCredentials() // no hash of megabytes
	}
	ctx, now := c.UserContext(), time.Now()
	var userID int64
	var stored sql.NullString
	err := a.db.QueryRowContext(ctx, `SELECT u.id, p.hash FROM meta.users u LEFT JOIN meta.user_passwords p ON p.user_id = u.id
		WHERE u.email = ? AND u.is_active`, email).Scan(&userID, &stored)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("cannot look up user %s: %w", email, err)
	}
	attempt, err := a.signIns.admit(email, a.clientAddress(c), userID != 0, now)
	if err != nil {
		return err
	}
	ok, err := a.hasher.verify(ctx, in.Password, stored.String)
	if err != nil {
		attempt.abandoned()
		return err
	}
	if !ok {
		attempt.failed(now)
		return errInvalidCredentials()
	}
	attempt.succeeded(now)
	if err := a.startSession(c, userID); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"success": true})
}

// startSession signs userID in: a new session, its cookies on the answer, and the
// user's last_login. It also removes the sessions that ended, everyone's, and the user's
// past the newest maxSessionsPerUser, so the table holds live sessions only.
func (a *API) startSession(c *fiber.Ctx, userID int64) error {
	ctx, now := c.UserContext(), time.Now()
	token := randomToken(32, 43)
	if _, err := a.db.ExecContext(ctx, `INSERT INTO meta.sessions (token_hash, user_id, created_at, expires_at, last_seen_at, ip, user_agent)
		VALUES (?, ?, ?, ?, ?, ?, ?)`, hashKey(token), userID, now, now.Add(sessionLifetime), now, a.clientAddress(c), truncate(c.Get(fiber.HeaderUserAgent), 512)); err != nil {
		return fmt.Errorf("cannot start a session of user %d: %w", userID, err)
	}
	if _, err := a.db.ExecContext(ctx, `DELETE FROM meta.sessions WHERE expires_at <= ? OR token_hash IN
		(SELECT token_hash FROM meta.sessions WHERE user_id = ? ORDER BY created_at DESC, token_hash OFFSET ?)`,
		now, userID, maxSessionsPerUser); err != nil {
		return fmt.Errorf("cannot remove the ended sessions of user %d: %w", userID, err)
	}
	if _, err := a.db.ExecContext(ctx, `UPDATE meta.users SET last_login = ? WHERE id = ?`, now, userID); err != nil {
		return fmt.Errorf("cannot record the sign-in of user %d: %w", userID, err)
	}
	a.setSessionCookies(c, token, sessionLifetime)
	return nil
}

// POST /api/logout/
// Ends the request's session, if it has one, and clears its cookies. A session
// request needs its CSRF token, as every unsafe one does.
func (a *API) logout(c *fiber.Ctx) error {
	if token := sessionToken(c); token != "" {
		if err := checkCSRF(c, token); err != nil {
			return err
		}
		if _, err := a.db.ExecContext(c.UserContext(), `DELETE FROM meta.sessions WHERE token_hash = ?`, hashKey(token)); err != nil {
			return fmt.Errorf("cannot end a session: %w", err)
		}
	}
	a.setSessionCookies(c, "", -1)
	return c.JSON(fiber.Map{"success": true})
}

// setSessionCookies sets the session cookie (HttpOnly) and the CSRF cookie (readable by
// the console's script) for token, for maxAge; a negative maxAge clears them. Over
// HTTPS (a public URL in https, or a request that came so) they are Secure and named
// with the __Host- prefix; on plain HTTP a browser would drop a Secure cookie.
func (a *API) setSessionCookies(c *fiber.Ctx, token string, maxAge time.Duration) {
	secure := a.secureCookies(c)
	csrf := ""
	if token != "" {
		csrf = csrfToken(token)
	}
	age := int(maxAge.Seconds())
	if maxAge < 0 {
		age = -1
	}
	for _, cookie := range []struct {
		name, value string
		httpOnly    bool
	}{{sessionCookie, token, true}, {csrfCookie, csrf, false}} {
		name := cookie.name
		if secure {
			name = "__Host-" + name
		}
		c.Cookie(&fiber.Cookie{Name: name, Value: cookie.value, Path: "/", MaxAge: age, HTTPOnly: cookie.httpOnly,
			SameSite: fiber.CookieSameSiteLaxMode, Secure: secure})
	}
}

func (a *API) secureCookies(c *fiber.Ctx) bool {
	return strings.HasPrefix(a.publicURL, "https://") || c.Protocol() == "https"
}

// sessionToken is the request's session cookie, under either of its names, or "".
func sessionToken(c *fiber.Ctx) string {
	if token := c.Cookies("__Host-" + sessionCookie); token != "" {
		return token
	}
	return c.Cookies(sessionCookie)
}

// csrfToken is the CSRF token of a session: derived from the session's token, which
// script cannot read, by a one-way function, so it needs no storage of its own, cannot
// give the session away, and ends with the session.
func csrfToken(sessionToken string) string {
	sum := sha256.Sum256([]byte("hedge csrf token\x00" + sessionToken))
	return hex.EncodeToString(sum[:])
}

// safeMethod reports the methods that change nothing, which need no CSRF token.
func safeMethod(method string) bool {
	return method == fiber.MethodGet || method == fiber.MethodHead || method == fiber.MethodOptions
}

// checkCSRF refuses an unsafe request of session token without its CSRF token or from
// another origin.
func checkCSRF(c *fiber.Ctx, token string) error {
	if safeMethod(c.Method()) {
		return nil
	}
	if err := checkOrigin(c); err != nil {
		return err
	}
	sent := c.Get(csrfHeader)
	if sent == "" {
		return errCSRF("CSRF token missing.")
	}
	if subtle.ConstantTimeCompare([]byte(sent), []byte(csrfToken(token))) != 1 {
		return errCSRF("CSRF token incorrect.")
	}
	return nil
}

// checkOrigin refuses a request that a browser says comes from another site: by
// Sec-Fetch-Site, when sent, or else by an Origin whose host is not the request's.
func checkOrigin(c *fiber.Ctx) error {
	switch c.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
	default:
		return errCSRF("Origin checking failed - the request came from another site.")
	}
	origin := c.Get(fiber.HeaderOrigin)
	if origin == "" {
		return nil
	}
	if u, err := url.Parse(origin); err != nil || u.Host != c.Hostname() {
		return errCSRF(fmt.Sprintf("Origin checking failed - %s does not match any trusted origins.", origin))
	}
	return nil
}

// sessionPrincipal is the caller of a request that carries a live session cookie, or
// nil when it carries none (or one that ended). Unsafe requests must pass checkCSRF.
func (a *API) sessionPrincipal(c *fiber.Ctx) (*principal, error) {
	token := sessionToken(c)
	if token == "" {
		return nil, nil
	}
	ctx := c.UserContext()
	hashed := hashKey(token)
	var p principal
	var lastSeen time.Time
	err := a.db.QueryRowContext(ctx, `SELECT s.user_id, s.last_seen_at FROM meta.sessions s JOIN meta.users u ON u.id = s.user_id
		WHERE s.token_hash = ? AND s.expires_at > now() AND u.is_active`, hashed).Scan(&p.userID, &lastSeen)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot look up a session: %w", err)
	}
	if err := checkCSRF(c, token); err != nil {
		return nil, err
	}
	if time.Since(lastSeen) > lastSeenEvery {
		if _, err := a.db.ExecContext(ctx, `UPDATE meta.sessions SET last_seen_at = now() WHERE token_hash = ?`, hashed); err != nil {
			return nil, fmt.Errorf("cannot record a session's use: %w", err)
		}
	}
	p.scopes = []string{"*"}
	return &p, nil
}

// endOtherSessions ends every session of user but the one of token (none when token
// is ""), in q: a changed password signs out the other browsers.
func endOtherSessions(ctx context.Context, q querier, userID int64, token string) error {
	if _, err := q.ExecContext(ctx, `DELETE FROM meta.sessions WHERE user_id = ? AND token_hash <> ?`, userID, hashKey(token)); err != nil {
		return fmt.Errorf("cannot end the other sessions of user %d: %w", userID, err)
	}
	return nil
}

// truncate cuts s to at most n bytes, as valid UTF-8 (DuckDB refuses anything else).
func truncate(s string, n int) string {
	if len(s) > n {
		s = s[:n]
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}
