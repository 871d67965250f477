package admin

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// X-Forwarded-For, -Host and -Proto count only from the trusted proxies: from any other
// peer, the client is the peer (sign-in limits, a session's address), the host the Host
// header (the origin check, absolute links) and the scheme the connection's (the
// cookies' Secure flag and __Host- prefix).
func TestTrustedProxies(t *testing.T) {
	forged := map[string]string{"X-Forwarded-For": "198.51.100.7", "X-Forwarded-Host": "evil.example", "X-Forwarded-Proto": "https"}
	proxied := map[string]string{"X-Forwarded-For": "203.0.113.9, 198.51.100.7, 192.0.2.10", "X-Forwarded-Host": "hedge.example",
		"X-Forwarded-Proto": "https"}
	for _, c := range []struct {
		name    string
		trusted string
		headers map[string]string
		// origin is sent with the sign-in, which refused says it is for
		origin  string
		refused bool
		// what the request is taken for; host "" is the listener's own
		client, host string
		secure       bool
	}{
		{name: "no proxy trusted", headers: forged, origin: "http://evil.example", refused: true, client: "127.0.0.1"},
		{name: "another proxy trusted", trusted: "10.0.0.0/8", headers: forged, origin: "http://evil.example", refused: true,
			client: "127.0.0.1"},
		// The first addresses are the client's own word: the last untrusted one counts.
		{name: "the peer trusted", trusted: "127.0.0.1", headers: proxied, origin: "https://hedge.example",
			client: "192.0.2.10", host: "hedge.example", secure: true},
		{name: "a chain of trusted proxies", trusted: "127.0.0.0/8, 192.0.2.0/24", headers: proxied, origin: "https://hedge.example",
			client: "198.51.100.7", host: "hedge.example", secure: true},
		{name: "every hop trusted", trusted: "127.0.0.1, 2001:db8::/32",
			headers: map[string]string{"X-Forwarded-For": "2001:db8:1::1, 2001:db8::2"}, client: "2001:db8:1::1"},
		{name: "a hop that is no address", trusted: "127.0.0.1",
			headers: map[string]string{"X-Forwarded-For": "192.0.2.1, unknown"}, client: "127.0.0.1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			proxies, err := ParseTrustedProxies(c.trusted)
			if err != nil {
				t.Fatal(err)
			}
			env := serveAPI(t, func(cfg *Config) { cfg.TrustedProxies = proxies })
			host := c.host
			if host == "" {
				host = strings.TrimPrefix(env.url, "http://")
			}
			signIn := func(origin string) (int, string, http.Header) {
				headers := map[string]string{}
				for k, v := range c.headers {
					headers[k] = v
				}
				if origin != "" {
					headers["Origin"] = origin
				}
				return env.do(t, "POST", "/api/login/", "", headers, `{"email":"`+env.boot.UserEmail+`","password":"`+env.boot.AdminPassword+`"}`)
			}
			// The origin check compares Origin with the host the request is taken for.
			status, body, header := signIn(c.origin)
			if c.refused {
				if status != 403 || !strings.Contains(body, "Origin checking failed") {
					t.Fatalf("sign-in from %s: %d %s", c.origin, status, body)
				}
				status, body, header = signIn("")
			}
			if status != 200 {
				t.Fatalf("sign-in: %d %s", status, body)
			}
			var session *http.Cookie
			for _, k := range (&http.Response{Header: header}).Cookies() {
				if strings.HasSuffix(k.Name, sessionCookie) {
					session = k
				}
			}
			if wantName := map[bool]string{false: sessionCookie, true: "__Host-" + sessionCookie}[c.secure]; session == nil ||
				session.Name != wantName || session.Secure != c.secure {
				t.Fatalf("session cookie %+v, want %s, Secure %v", session, wantName, c.secure)
			}
			var ip string
			if err := env.warehouse.DB().QueryRow(`SELECT ip FROM meta.sessions WHERE token_hash = ?`, hashKey(session.Value)).Scan(&ip); err != nil || ip != c.client {
				t.Fatalf("the session's address is %q (%v), want %s", ip, err, c.client)
			}
			// Absolute links start with the host the request is taken for.
			env.must(t, 201, "POST", env.project+"/dashboards/", env.owner, `{"name":"one"}`)
			env.must(t, 201, "POST", env.project+"/dashboards/", env.owner, `{"name":"two"}`)
			_, page, _ := env.do(t, "GET", env.project+"/dashboards/?limit=1", env.owner, c.headers, "")
			scheme := map[bool]string{false: "http", true: "https"}[c.secure]
			if want := `"next":"` + scheme + "://" + host + "/"; !strings.Contains(page, want) {
				t.Fatalf("the page %s\ndoes not link to %s", page, want)
			}
		})
	}
}

// The sign-in limits count per client: without a trusted proxy, a forged
// X-Forwarded-For does not make each guess come from a new address.
func TestForgedForwardedForIsOneClient(t *testing.T) {
	env := newTestEnv(t, "")
	for i := range maxFailures {
		env.do(t, "POST", "/api/login/", "", map[string]string{"X-Forwarded-For": fmt.Sprintf("198.51.100.%d", i+1)},
			`{"email":"`+env.boot.UserEmail+`","password":"a guess"}`)
	}
	status, body, _ := env.do(t, "POST", "/api/login/", "", map[string]string{"X-Forwarded-For": "203.0.113.1"},
		`{"email":"`+env.boot.UserEmail+`","password":"`+env.boot.AdminPassword+`"}`)
	if status != 403 || !strings.Contains(body, `"code":"too_many_failed_attempts"`) {
		t.Fatalf("the right password after %d guesses, each with another X-Forwarded-For: %d %s", maxFailures, status, body)
	}
}

func TestParseTrustedProxies(t *testing.T) {
	for _, c := range []struct{ list, want, err string }{
		{list: "", want: ""},
		{list: "10.0.0.0/8, 192.0.2.1 ,::1,2001:db8::/32", want: "10.0.0.0/8 192.0.2.1/32 ::1/128 2001:db8::/32"},
		{list: "10.1.2.3/8", want: "10.0.0.0/8"},
		{list: "::ffff:192.0.2.1", want: "192.0.2.1/32"},
		{list: "10.0.0.0/33", err: `invalid trusted proxy "10.0.0.0/33"`},
		{list: "proxy.example", err: `invalid trusted proxy "proxy.example"`},
	} {
		got, err := ParseTrustedProxies(c.list)
		if c.err != "" {
			if err == nil || !strings.HasPrefix(err.Error(), c.err) {
				t.Errorf("%q: %v, want %s", c.list, err, c.err)
			}
			continue
		}
		if err != nil || strings.Join(proxyStrings(got), " ") != c.want {
			t.Errorf("%q: %v %v, want %s", c.list, got, err, c.want)
		}
	}
}
