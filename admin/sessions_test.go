package admin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// Tests hash passwords at a small cost: the cost is a parameter of the PHC string, and
// what is tested is everything around it.
func init() { passwordCost = argon2Params{memoryKiB: 64, passes: 1, threads: 1} }

// signIn signs email in with password and returns the session and CSRF cookies.
func (env *testEnv) signIn(t *testing.T, email, password string) (session, csrf *http.Cookie) {
	t.Helper()
	status, body, header := env.do(t, "POST", "/api/login/", "", nil, `{"email":"`+email+`","password":"`+password+`"}`)
	if status != 200 || body != `{"success":true}` {
		t.Fatalf("sign-in of %s: %d %s", email, status, body)
	}
	for _, c := range (&http.Response{Header: header}).Cookies() {
		switch c.Name {
		case sessionCookie:
			session = c
		case csrfCookie:
			csrf = c
		}
	}
	if session == nil || csrf == nil {
		t.Fatalf("sign-in set cookies %v", header["Set-Cookie"])
	}
	return session, csrf
}

// withSession are the headers of a request of the session, with its CSRF token when
// csrf is not empty, and more.
func withSession(session *http.Cookie, csrf string, more ...string) map[string]string {
	h := map[string]string{"Cookie": session.Name + "=" + session.Value}
	if csrf != "" {
		h[csrfHeader] = csrf
	}
	for i := 0; i+1 < len(more); i += 2 {
		h[more[i]] = more[i+1]
	}
	return h
}

func TestSessions(t *testing.T) {
	env := newTestEnv(t, "")
	if env.boot.AdminPassword == "" {
		t.Fatal("the bootstrap has no admin password")
	}
	email := env.boot.UserEmail
	session, csrf := env.signIn(t, email, env.boot.AdminPassword)
	// The session cookie is out of script's reach; the CSRF cookie is for script.
	if !session.HttpOnly || session.SameSite != http.SameSiteLaxMode || session.Path != "/" || session.Secure ||
		session.MaxAge != int(sessionLifetime.Seconds()) {
		t.Fatalf("session cookie %+v", session)
	}
	if csrf.HttpOnly || csrf.SameSite != http.SameSiteLaxMode || csrf.Value != csrfToken(session.Value) {
		t.Fatalf("CSRF cookie %+v", csrf)
	}
	var stored int
	if err := env.warehouse.DB().QueryRow(`SELECT count(*) FROM meta.sessions WHERE token_hash = ?`, hashKey(session.Value)).Scan(&stored); err != nil || stored != 1 {
		t.Fatalf("the session is stored %d times by its hash (%v)", stored, err)
	}
	patch := `{"first_name":"Ada"}`
	csrfFailed := func(reason string) []string {
		return []string{`{"type":"authentication_error","code":"permission_denied","detail":"CSRF Failed: ` + reason + `","attr":null}`}
	}
	env.run(t, []scenario{
		{name: "a read with the session", method: "GET", path: "/api/users/@me/", headers: withSession(session, ""), status: 200,
			want: []string{`"email":"` + email + `"`, `"has_password":true`}},
		{name: "a change without the CSRF token", method: "PATCH", path: "/api/users/@me/", headers: withSession(session, ""), body: patch,
			status: 403, want: csrfFailed("CSRF token missing.")},
		{name: "a change with a wrong token", method: "PATCH", path: "/api/users/@me/", headers: withSession(session, "x"+csrf.Value[1:]),
			body: patch, status: 403, want: csrfFailed("CSRF token incorrect.")},
		{name: "a change from another origin", method: "PATCH", path: "/api/users/@me/",
			headers: withSession(session, csrf.Value, "Origin", "https://evil.example"), body: patch, status: 403,
			want: csrfFailed("Origin checking failed - https://evil.example does not match any trusted origins.")},
		{name: "a change from another site", method: "PATCH", path: "/api/users/@me/",
			headers: withSession(session, csrf.Value, "Sec-Fetch-Site", "cross-site"), body: patch, status: 403,
			want: csrfFailed("Origin checking failed - the request came from another site.")},
		{name: "a change with the token", method: "PATCH", path: "/api/users/@me/",
			headers: withSession(session, csrf.Value, "Origin", strings.TrimSuffix(env.url, "/"), "Sec-Fetch-Site", "same-origin"),
			body:    patch, status: 200, want: []string{`"first_name":"Ada"`}},
		{name: "a key needs no token", method: "PATCH", path: "/api/users/@me/", key: env.owner, body: `{"last_name":"L"}`, status: 200,
			want: []string{`"last_name":"L"`}},
		{name: "a session acts with every scope", method: "POST", path: "/api/projects/1/dashboards/",
			headers: withSession(session, csrf.Value), body: `{"name":"By session"}`, status: 201},
		{name: "a sign-in from another site", method: "POST", path: "/api/login/", headers: map[string]string{"Origin": "https://evil.example"},
			body: `{"email":"` + email + `","password":"` + env.boot.AdminPassword + `"}`, status: 403,
			want: csrfFailed("Origin checking failed - https://evil.example does not match any trusted origins.")},
		{name: "no cookie", method: "GET", path: "/api/users/@me/", status: 401},
		{name: "a made-up cookie", method: "GET", path: "/api/users/@me/", headers: map[string]string{"Cookie": sessionCookie + "=made-up"}, status: 401},
	})

	// A session ends at its expiry...
	other, _ := env.signIn(t, email, env.boot.AdminPassword)
	env.exec(t, `UPDATE meta.sessions SET expires_at = now() - INTERVAL 1 SECOND WHERE token_hash = ?`, hashKey(other.Value))
	if status, _, _ := env.do(t, "GET", "/api/users/@me/", "", withSession(other, ""), ""); status != 401 {
		t.Fatalf("an expired session: %d", status)
	}
	// ...and at sign-out, whose cookies are cleared.
	status, body, header := env.do(t, "POST", "/api/logout/", "", withSession(session, csrf.Value), "")
	if status != 200 || body != `{"success":true}` || !strings.Contains(strings.Join(header["Set-Cookie"], "\n"), sessionCookie+"=;") {
		t.Fatalf("sign-out: %d %s %v", status, body, header["Set-Cookie"])
	}
	if status, _, _ := env.do(t, "GET", "/api/users/@me/", "", withSession(session, ""), ""); status != 401 {
		t.Fatalf("after sign-out: %d", status)
	}
}

// A wrong password and an unknown e-mail get the same answer; ten failures of one
// e-mail from one address lock it out, the right password included; an address
// trying too often is throttled.
func TestSignInLimits(t *testing.T) {
	env := newTestEnv(t, "")
	email := env.boot.UserEmail
	invalid := `{"type":"validation_error","code":"invalid_credentials","detail":"Invalid email or password.","attr":null}`
	env.run(t, []scenario{
		{name: "a wrong password", method: "POST", path: "/api/login/", body: `{"email":"` + email + `","password":"wrong password"}`,
			status: 400, want: []string{invalid}},
		{name: "an unknown e-mail", method: "POST", path: "/api/login/", body: `{"email":"nobody@example.com","password":"wrong password"}`,
			status: 400, want: []string{invalid}},
		{name: "no password", method: "POST", path: "/api/login/", body: `{"email":"` + email + `"}`, status: 400,
			want: []string{`"attr":"password"`}},
	})
	for range maxFailures - 1 { // one failure above already
		env.do(t, "POST", "/api/login/", "", nil, `{"email":"`+email+`","password":"wrong password"}`)
	}
	status, body, _ := env.do(t, "POST", "/api/login/", "", nil, `{"email":"`+email+`","password":"`+env.boot.AdminPassword+`"}`)
	if status != 403 || !strings.Contains(body, `"code":"too_many_failed_attempts"`) {
		t.Fatalf("the right password after %d failures: %d %s", maxFailures, status, body)
	}
	// The lockout is of the pair: the limiter lets another e-mail in.
	now := time.Now()
	if _, err := env.api.signIns.admit("other@example.com", "127.0.0.1", false, now); err != nil {
		t.Fatalf("another e-mail: %v", err)
	}
	l := newSignInLimiter()
	for i := range maxSignInsPerMinute {
		if _, err := l.admit(fmt.Sprintf("%d@example.com", i), "192.0.2.1", false, now); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.admit("b@example.com", "192.0.2.1", false, now); err == nil || err.(*Error).Status != 429 {
		t.Fatalf("attempt %d of a minute: %v", maxSignInsPerMinute+1, err)
	}
	if _, err := l.admit("b@example.com", "192.0.2.1", false, now.Add(time.Minute)); err != nil {
		t.Fatalf("the next minute: %v", err)
	}
}

// An IPv6 client counts as its /64, which one host holds whole: its addresses share
// one budget, and another /64 has its own.
func TestSignInLimitsIPv6(t *testing.T) {
	for _, c := range []struct{ ip, key string }{
		{"192.0.2.1", "192.0.2.1"},
		{"::ffff:192.0.2.1", "192.0.2.1"},
		{"2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"},
		{"2001:db8:1:2::", "2001:db8:1:2::/64"},
		{"2001:db8:1:3::1", "2001:db8:1:3::/64"},
		{"fe80::1%eth0", "fe80::/64"},
	} {
		if got := addressKey(c.ip); got != c.key {
			t.Errorf("addressKey(%s) = %s, want %s", c.ip, got, c.key)
		}
	}
	l, now := newSignInLimiter(), time.Now()
	for i := range maxSignInsPerMinute {
		if _, err := l.admit(fmt.Sprintf("%d@example.com", i), fmt.Sprintf("2001:db8:1:2::%x", i+1), false, now); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.admit("a@example.com", "2001:db8:1:2:ffff::1", false, now); err == nil || err.(*Error).Status != 429 {
		t.Fatalf("attempt %d of a minute from one /64: %v", maxSignInsPerMinute+1, err)
	}
	if _, err := l.admit("a@example.com", "2001:db8:1:3::1", false, now); err != nil {
		t.Fatalf("another /64: %v", err)
	}
}

// An e-mail's attempts from every address together are bounded: accountBurst, then
// one every accountRefill, an attempt holding its share until it succeeds (so that
// concurrent ones cannot all pass); an address that signed the e-mail in before is
// spared, and a made-up e-mail is counted alike in a table of its own.
func TestSignInAccountBudget(t *testing.T) {
	l, now := newSignInLimiter(), time.Now()
	admit := l.admit
	owner := "owner@example.com"
	known, err := admit(owner, "192.0.2.1", true, now)
	if err != nil {
		t.Fatal(err)
	}
	known.succeeded(now)
	// accountBurst attempts in flight from as many addresses, none reported yet.
	for i := range accountBurst {
		if _, err := admit(owner, fmt.Sprintf("198.51.100.%d", i+1), true, now); err != nil {
			t.Fatalf("attempt %d: %v", i+1, err)
		}
	}
	_, err = admit(owner, "203.0.113.1", true, now)
	if e, ok := err.(*Error); !ok || e.Status != 429 || e.RetryAfter != int(accountRefill.Seconds()) {
		t.Fatalf("attempt %d from a new address: %v", accountBurst+1, err)
	}
	// The made-up e-mails' table is another: it neither spends nor is spent by a user's.
	if _, err := admit(owner, "203.0.113.2", false, now); err != nil {
		t.Fatalf("the same e-mail counted as made up: %v", err)
	}
	// The owner's own address is spared.
	if _, err := admit(owner, "192.0.2.1", true, now); err != nil {
		t.Fatalf("from the address that signed in: %v", err)
	}
	// One attempt more an accountRefill later, given back when it succeeds.
	later := now.Add(accountRefill)
	a, err := admit(owner, "203.0.113.3", true, later)
	if err != nil {
		t.Fatalf("after %s: %v", accountRefill, err)
	}
	a.succeeded(later)
	if _, err := admit(owner, "203.0.113.4", true, later); err != nil {
		t.Fatalf("after a success gave its token back: %v", err)
	}
	if _, err := admit(owner, "203.0.113.5", true, later); err == nil {
		t.Fatal("the budget is spent again, and admits one more")
	}
}

// A password is changed from a session, with the current one; the user's other
// sessions end, the one that changed it stays.
func TestPasswordChange(t *testing.T) {
	env := newTestEnv(t, "")
	email, old := env.boot.UserEmail, env.boot.AdminPassword
	first, csrf := env.signIn(t, email, old)
	second, _ := env.signIn(t, email, old)
	env.run(t, []scenario{
		{name: "not with a key", method: "PATCH", path: "/api/users/@me/", key: env.owner, body: `{"password":"a new password 1","current_password":"` + old + `"}`,
			status: 403},
		{name: "not without the current one", method: "PATCH", path: "/api/users/@me/", headers: withSession(first, csrf.Value),
			body: `{"password":"a new password 1"}`, status: 400, want: []string{`"attr":"current_password"`, `"code":"required"`}},
		{name: "not with a wrong current one", method: "PATCH", path: "/api/users/@me/", headers: withSession(first, csrf.Value),
			body: `{"password":"a new password 1","current_password":"wrong"}`, status: 400, want: []string{`"code":"incorrect_password"`}},
		{name: "not too short", method: "PATCH", path: "/api/users/@me/", headers: withSession(first, csrf.Value),
			body: `{"password":"short","current_password":"` + old + `"}`, status: 400, want: []string{`"code":"password_too_short"`}},
		{name: "not the e-mail", method: "PATCH", path: "/api/users/@me/", headers: withSession(first, csrf.Value),
			body: `{"password":"` + email + `","current_password":"` + old + `"}`, status: 400, want: []string{`"code":"password_too_similar"`}},
		{name: "changed", method: "PATCH", path: "/api/users/@me/", headers: withSession(first, csrf.Value),
			body: `{"password":"a new password 1","current_password":"` + old + `"}`, status: 200},
		{name: "this session stays", method: "GET", path: "/api/users/@me/", headers: withSession(first, ""), status: 200},
		{name: "the other ended", method: "GET", path: "/api/users/@me/", headers: withSession(second, ""), status: 401},
		{name: "the old password is refused", method: "POST", path: "/api/login/", body: `{"email":"` + email + `","password":"` + old + `"}`,
			status: 400},
		{name: "the new one signs in", method: "POST", path: "/api/login/", body: `{"email":"` + email + `","password":"a new password 1"}`,
			status: 200},
	})
}

// Hashes wait at most hashWait for a slot, then the request is refused with a 503.
func TestHashSlots(t *testing.T) {
	h := newHasher()
	h.slots.Acquire(t.Context(), maxConcurrentHashes) // every slot taken
	ctx, cancel := context.WithCancel(t.Context())
	cancel() // as a wait that ran out
	_, err := h.hash(ctx, "a long password")
	var apiErr *Error
	if !errors.As(err, &apiErr) || apiErr.Status != 503 {
		t.Fatalf("a hash without a slot: %v", err)
	}
	h.slots.Release(1)
	if _, err := h.hash(t.Context(), "a long password"); err != nil {
		t.Fatalf("a hash with a slot free: %v", err)
	}
}

// An invite shows its e-mail masked before it is accepted, and accepting it with a
// password signs the new user in.
func TestSignupWithPassword(t *testing.T) {
	env := newTestEnv(t, "")
	invite := env.must(t, 201, "POST", env.orgPath("invites/"), env.owner, `{"target_email":"ada@example.com","first_name":"Ada"}`)["id"].(string)
	path := "/api/signup/" + invite + "/"
	env.run(t, []scenario{
		{name: "the preview", method: "GET", path: path, status: 200,
			want: []string{`{"id":"` + invite + `","target_email":"a****@example.com","first_name":"Ada","organization_name":"Default organization"}`}},
		{name: "an unknown invite", method: "GET", path: "/api/signup/" + uuid.NewString() + "/", status: 400,
			want: []string{`"detail":"The provided invite ID is not valid."`}},
		{name: "a short password", method: "POST", path: path, body: `{"password":"short"}`, status: 400,
			want: []string{`"attr":"password"`, `"code":"password_too_short"`}},
		{name: "from another site", method: "POST", path: path, headers: map[string]string{"Sec-Fetch-Site": "cross-site"},
			body: `{"password":"a long password"}`, status: 403},
	})
	status, body, header := env.do(t, "POST", path, "", nil, `{"password":"a long password"}`)
	if status != 201 || !strings.Contains(body, `"email":"ada@example.com"`) {
		t.Fatalf("sign-up: %d %s", status, body)
	}
	var session *http.Cookie
	for _, c := range (&http.Response{Header: header}).Cookies() {
		if c.Name == sessionCookie {
			session = c
		}
	}
	if session == nil {
		t.Fatalf("sign-up set no session: %v", header["Set-Cookie"])
	}
	if status, text, _ := env.do(t, "GET", "/api/users/@me/", "", withSession(session, ""), ""); status != 200 || !strings.Contains(text, `"has_password":true`) {
		t.Fatalf("the new user's session: %d %s", status, text)
	}
	env.signIn(t, "ada@example.com", "a long password")
}

// Signing in removes the sessions that ended, and a user's past the newest
// maxSessionsPerUser: the table holds live sessions only, however often one signs in.
func TestSessionsBounded(t *testing.T) {
	env := newTestEnv(t, "")
	var userID int64
	if err := env.warehouse.DB().QueryRow(`SELECT id FROM meta.users WHERE email = ?`, env.boot.UserEmail).Scan(&userID); err != nil {
		t.Fatal(err)
	}
	// maxSessionsPerUser older sessions of the user, and one of another user that ended.
	env.exec(t, `INSERT INTO meta.sessions SELECT 'sha256$old' || range, ?, now() - INTERVAL 1 DAY + range * INTERVAL 1 SECOND,
		now() + INTERVAL 1 DAY, now(), '', '' FROM range(?)`, userID, maxSessionsPerUser)
	env.exec(t, `INSERT INTO meta.sessions VALUES ('sha256$ended', 999, now() - INTERVAL 20 DAY, now() - INTERVAL 6 DAY, now(), '', '')`)
	session, _ := env.signIn(t, env.boot.UserEmail, env.boot.AdminPassword)
	var live, oldest, ended, mine int
	if err := env.warehouse.DB().QueryRow(`SELECT count(*) FILTER (user_id = ?), count(*) FILTER (token_hash = 'sha256$old0'),
		count(*) FILTER (token_hash = 'sha256$ended'), count(*) FILTER (token_hash = ?) FROM meta.sessions`,
		userID, hashKey(session.Value)).Scan(&live, &oldest, &ended, &mine); err != nil {
		t.Fatal(err)
	}
	if live != maxSessionsPerUser || oldest != 0 || ended != 0 || mine != 1 {
		t.Fatalf("%d sessions of the user (oldest kept %d, new one %d), ended one kept %d", live, oldest, mine, ended)
	}
}

// Over HTTP, behind a trusted proxy that names each client: one e-mail guessed from
// many addresses is throttled with Retry-After, the right password included, while the
// address its owner signed in from before still signs in.
func TestSignInGuessedFromManyAddresses(t *testing.T) {
	env := serveAPI(t, func(cfg *Config) { cfg.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")} })
	email, password := env.boot.UserEmail, env.boot.AdminPassword
	from := func(ip string) map[string]string { return map[string]string{"X-Forwarded-For": ip} }
	signIn := func(ip, password string) (int, string, http.Header) {
		t.Helper()
		return env.do(t, "POST", "/api/login/", "", from(ip), `{"email":"`+email+`","password":"`+password+`"}`)
	}
	if status, body, _ := signIn("192.0.2.1", password); status != 200 {
		t.Fatalf("the owner's sign-in: %d %s", status, body)
	}
	for i := range accountBurst {
		if status, body, _ := signIn(fmt.Sprintf("198.51.100.%d", i+1), "a guess"); status != 400 {
			t.Fatalf("guess %d: %d %s", i+1, status, body)
		}
	}
	status, body, header := signIn("203.0.113.1", password)
	if status != 429 || !strings.Contains(body, `"code":"throttled"`) || header.Get("Retry-After") == "" {
		t.Fatalf("the right password from a new address after %d guesses: %d %s (Retry-After %q)", accountBurst, status, body, header.Get("Retry-After"))
	}
	if status, body, _ := signIn("192.0.2.1", password); status != 200 {
		t.Fatalf("the owner's address after %d guesses: %d %s", accountBurst, status, body)
	}
}

// Guesses of current_password count as sign-ins: ten wrong ones lock the user's e-mail
// out from the address, and the right one is then refused too.
func TestPasswordChangeLimited(t *testing.T) {
	env := newTestEnv(t, "")
	session, csrf := env.signIn(t, env.boot.UserEmail, env.boot.AdminPassword)
	change := func(current string) (int, string) {
		t.Helper()
		status, body, _ := env.do(t, "PATCH", "/api/users/@me/", "", withSession(session, csrf.Value),
			`{"password":"a new password 1","current_password":"`+current+`"}`)
		return status, body
	}
	for i := range maxFailures {
		if status, body := change("a guess"); status != 400 || !strings.Contains(body, `"code":"incorrect_password"`) {
			t.Fatalf("guess %d: %d %s", i+1, status, body)
		}
	}
	if status, body := change(env.boot.AdminPassword); status != 403 || !strings.Contains(body, `"code":"too_many_failed_attempts"`) {
		t.Fatalf("the right password after %d guesses: %d %s", maxFailures, status, body)
	}
}

// An unknown e-mail takes no hashing slot: with every slot held, it is still answered
// (the 400 of a wrong password), not left to wait for one.
func TestUnknownEmailTakesNoHashSlot(t *testing.T) {
	env := newTestEnv(t, "")
	wrong := `{"type":"validation_error","code":"invalid_credentials","detail":"Invalid email or password.","attr":null}`
	env.run(t, []scenario{{name: "a wrong password", method: "POST", path: "/api/login/", // computes a hash
		body: `{"email":"` + env.boot.UserEmail + `","password":"a guess"}`, status: 400, want: []string{wrong}}})
	env.api.hasher.slots.Acquire(t.Context(), maxConcurrentHashes)
	defer env.api.hasher.slots.Release(maxConcurrentHashes)
	env.run(t, []scenario{{name: "an unknown e-mail", method: "POST", path: "/api/login/",
		body: `{"email":"nobody@example.com","password":"a guess"}`, status: 400, want: []string{wrong}}})
}
