package admin

import "testing"

// Offsets and limits as large as an int holds page like any others: past the end
// there is no next page, whatever offset+limit would overflow to.
func TestPageLimits(t *testing.T) {
	env := newTestEnv(t, "")
	const maxInt = "9223372036854775807"
	env.run(t, []scenario{
		{name: "offset past the end", method: "GET", path: "/api/organizations/{org}/projects/?offset=" + maxInt, key: env.owner, status: 200,
			want: []string{`"count":1,"next":null,`, `"results":[]`}},
		{name: "the largest limit", method: "GET", path: "/api/organizations/{org}/projects/?limit=" + maxInt + "&offset=1", key: env.owner, status: 200,
			want: []string{`"count":1,"next":null,`, `"results":[]`}},
		{name: "an offset beyond an int", method: "GET", path: "/api/organizations/{org}/projects/?offset=99999999999999999999", key: env.owner, status: 200,
			want: []string{`"count":1,"next":null,"previous":null,`}},
	})
}
