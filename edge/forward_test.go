package edge_test

import (
	"context"
	"strings"
	"testing"

	"github.com/hedge-analytics/hedge/admin"
	"github.com/hedge-analytics/hedge/edge"
)

// The SDK routes the capture listener forwards to the management API: personal API
// keys authenticate them, never the console's session (whose cookie a browser sends to
// every port of the host), and their answers never let another origin read them with
// credentials; and the management API routes exactly the path the edge matched, not
// another spelling of it that it would route elsewhere.
func TestSDKRoutesForwarded(t *testing.T) {
	env := newCaptureEnv(t, edge.Config{})
	const password = "a long password 1"
	if err := admin.SetPassword(context.Background(), env.warehouse.DB(), "admin@localhost", password); err != nil {
		t.Fatal(err)
	}
	signIn := (&captureEnv{url: env.adminURL}).send(t, "POST", "/api/login/",
		[]byte(`{"email":"admin@localhost","password":"`+password+`"}`), map[string]string{"Content-Type": "application/json"})
	var session string
	for _, c := range strings.Split(signIn.header.Get("Set-Cookie"), ";") {
		if strings.HasPrefix(c, "hedge_session=") {
			session = c
		}
	}
	if signIn.status != 200 || session == "" {
		t.Fatalf("sign-in: %d %s %v", signIn.status, signIn.body, signIn.header["Set-Cookie"])
	}
	bearer := "Bearer " + env.personalKey
	definitions := `{"flags":[],"group_type_mapping":{},"cohorts":{},`
	notAuthenticated := `{"type":"authentication_error","code":"not_authenticated","detail":"Authentication credentials were not provided.","attr":null}`
	for _, c := range []struct {
		name, path, authorization, cookie string
		status                            int
		body                              string // the answer's start
	}{
		{name: "a key", path: "/flags/definitions?token=" + env.token, authorization: bearer, status: 200, body: definitions},
		{name: "a session", path: "/flags/definitions?token=" + env.token, cookie: session, status: 401, body: notAuthenticated},
		{name: "a session, the older path", path: "/api/feature_flag/local_evaluation?token=" + env.token, cookie: session,
			status: 401, body: notAuthenticated},
		{name: "a session, remote config", path: "/api/projects/@current/feature_flags/x/remote_config?token=" + env.token,
			cookie: session, status: 401, body: notAuthenticated},
		// The edge reads this as /flags/definitions; the management API, given it as
		// sent, would answer its console page (/project/*).
		{name: "another spelling", path: "/project/..%2Fflags%2Fdefinitions?token=" + env.token, authorization: bearer,
			status: 200, body: definitions},
		{name: "another spelling, escaped", path: "/flags/%64efinitions/?token=" + env.token, authorization: bearer,
			status: 200, body: definitions},
	} {
		t.Run(c.name, func(t *testing.T) {
			headers := map[string]string{"Origin": "https://evil.example"}
			if c.authorization != "" {
				headers["Authorization"] = c.authorization
			}
			if c.cookie != "" {
				headers["Cookie"] = c.cookie
			}
			a := env.send(t, "GET", c.path, nil, headers)
			if a.status != c.status || !strings.HasPrefix(a.body, c.body) {
				t.Fatalf("%d %s, want %d %s", a.status, a.body, c.status, c.body)
			}
			if got := a.header.Get("Access-Control-Allow-Credentials"); got != "" {
				t.Fatalf("Access-Control-Allow-Credentials: %s", got)
			}
		})
	}
}
