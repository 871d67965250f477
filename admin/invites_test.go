package admin

import (
	"fmt"
	"io"
	"mime"
	"mime/quotedprintable"
	"net/mail"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

func TestInvites(t *testing.T) {
	env := serveAPI(t, nil) // no SMTP: nothing is e-mailed
	_, adminKey := env.member(t, "admin@example.com", levelAdmin, "organization_member:write")
	_, memberKey := env.member(t, "member@example.com", levelMember, "organization_member:write")
	otherOrg, outsiderKey := env.addUser(t, "outsider@example.com", uuid.Nil, levelOwner, "*")
	private := env.must(t, 201, "POST", env.orgPath("projects/"), env.owner, `{"name":"Private","access_control":true}`)["id"].(float64)
	invites := "/api/organizations/{org}/invites/"
	theirs := env.must(t, 201, "POST", "/api/organizations/"+otherOrg.String()+"/invites/", outsiderKey, `{"target_email":"theirs@example.com"}`)["id"].(string)

	first := env.must(t, 201, "POST", env.orgPath("invites/"), memberKey, `{"target_email":"New@Example.com","first_name":"Ada","message":"hi"}`)
	env.run(t, []scenario{
		{name: "the invite with its defaults", method: "GET", path: invites, key: memberKey, status: 200,
			want: []string{`"count":1`, `"id":"` + first["id"].(string) + `"`, `"target_email":"new@example.com"`, `"first_name":"Ada"`,
				`"emailing_attempt_made":false`, `"level":1`, `"is_expired":false`, `"created_by":{"id":3,`,
				`"email":"member@example.com"`, `"message":"hi"`, `"private_project_access":[]`},
			notWant: []string{`"send_email"`, `"combine_pending_invites"`}},
		{name: "target_email required", method: "POST", path: invites, key: memberKey, body: `{"first_name":"x"}`, status: 400,
			want: []string{`{"type":"validation_error","code":"required","detail":"This field is required.","attr":"target_email"}`}},
		{name: "target_email an address", method: "POST", path: invites, key: memberKey, body: `{"target_email":"Ada <ada@example.com>"}`,
			status: 400, want: []string{`"detail":"Enter a valid email address."`, `"attr":"target_email"`}},
		{name: "first_name at most 30", method: "POST", path: invites, key: memberKey,
			body: `{"target_email":"a@example.com","first_name":"` + strings.Repeat("a", 31) + `"}`, status: 400, want: []string{`"attr":"first_name"`}},
		{name: "a level that is not 1, 8 or 15", method: "POST", path: invites, key: env.owner, body: `{"target_email":"a@example.com","level":2}`,
			status: 400, want: []string{`"code":"invalid_choice"`, `"attr":"level"`}},
		{name: "a level of the wrong type", method: "POST", path: invites, key: env.owner, body: `{"target_email":"a@example.com","level":"admin"}`,
			status: 400, want: []string{`{"type":"validation_error","code":"invalid_input","detail":"A valid integer is required.","attr":"level"}`}},
		{name: "above the inviter's level", method: "POST", path: invites, key: memberKey, body: `{"target_email":"a@example.com","level":8}`,
			status: 403, want: []string{`{"type":"authentication_error","code":"permission_denied","detail":"You cannot invite a user with a higher permission level than your own.","attr":null}`}},
		{name: "admins do not invite owners", method: "POST", path: invites, key: adminKey, body: `{"target_email":"a@example.com","level":15}`,
			status: 403},
		{name: "admins invite admins", method: "POST", path: invites, key: adminKey, body: `{"target_email":"adm@example.com","level":8}`,
			status: 201, want: []string{`"level":8`}},
		{name: "an existing member, any case", method: "POST", path: invites, key: env.owner, body: `{"target_email":"ADMIN@example.com"}`,
			status: 400, want: []string{`{"type":"validation_error","code":"invalid_input","detail":"A user with this email address already belongs to the organization.","attr":null}`}},
		{name: "private_project_access must be a list", method: "POST", path: invites, key: env.owner,
			body: `{"target_email":"p@example.com","private_project_access":{"id":1}}`, status: 400,
			want: []string{`"detail":"The field must be a list of dictionaries."`, `"attr":"private_project_access"`}},
		{name: "private_project_access items are objects", method: "POST", path: invites, key: env.owner,
			body: `{"target_email":"p@example.com","private_project_access":[1]}`, status: 400,
			want: []string{`"detail":"Each item in the list must be a dictionary."`}},
		{name: "private_project_access items have id and level", method: "POST", path: invites, key: env.owner,
			body: `{"target_email":"p@example.com","private_project_access":[{"id":1}]}`, status: 400,
			want: []string{`"detail":"Each dictionary must contain \"id\" and \"level\" keys."`}},
		{name: "private_project_access levels", method: "POST", path: invites, key: env.owner,
			body: `{"target_email":"p@example.com","private_project_access":[{"id":1,"level":"owner"}]}`, status: 400,
			want: []string{`"detail":"The \"level\" field must be a valid access level."`}},
		{name: "private_project_access ids are integers", method: "POST", path: invites, key: env.owner,
			body: `{"target_email":"p@example.com","private_project_access":[{"id":"1","level":"member"}]}`, status: 400,
			want: []string{`"detail":"The \"id\" field must be an integer."`}},
		{name: "a project of another organization", method: "POST", path: invites, key: env.owner,
			body: `{"target_email":"p@example.com","private_project_access":[{"id":999,"level":"member"}]}`, status: 400,
			want: []string{`"detail":"Project does not exist on this organization, or it is private and you do not have access to it."`, `"attr":"private_project_access"`}},
		{name: "members do not grant private projects", method: "POST", path: invites, key: memberKey,
			body: fmt.Sprintf(`{"target_email":"p@example.com","private_project_access":[{"id":%d,"level":"member"}]}`, int(private)), status: 400,
			want: []string{`"attr":"private_project_access"`}},
		{name: "admins do", method: "POST", path: invites, key: adminKey,
			body: fmt.Sprintf(`{"target_email":"p@example.com","private_project_access":[{"id":%d,"level":"admin"}]}`, int(private)), status: 201,
			want: []string{fmt.Sprintf(`"private_project_access":[{"id":%d,"level":"admin"}]`, int(private))}},
		{name: "another tenant's invites", method: "GET", path: invites, key: outsiderKey, status: 404},
		{name: "members do not cancel invites", method: "DELETE", path: invites + first["id"].(string) + "/", key: memberKey, status: 403,
			want: []string{`"detail":"Your organization access level is insufficient."`}},
		{name: "no such invite", method: "DELETE", path: invites + uuid.NewString() + "/", key: adminKey, status: 404},
		{name: "another organization's invite under ours", method: "DELETE", path: invites + theirs + "/", key: env.owner, status: 404,
			want: []string{`{"type":"invalid_request","code":"not_found","detail":"Not found.","attr":null}`}},
		{name: "is still theirs", method: "GET", path: "/api/organizations/" + otherOrg.String() + "/invites/", key: outsiderKey, status: 200,
			want: []string{`"count":1`, `"id":"` + theirs + `"`}},
		{name: "admins cancel invites", method: "DELETE", path: invites + first["id"].(string) + "/", key: adminKey, status: 204},
		{name: "cancelled", method: "GET", path: invites, key: adminKey, status: 200, want: []string{`"count":2`},
			notWant: []string{first["id"].(string)}},
	})
}

func TestInviteReplaceAndCombine(t *testing.T) {
	env := serveAPI(t, nil)
	projectA := int(env.boot.ProjectID)
	projectB := int(env.must(t, 201, "POST", env.orgPath("projects/"), env.owner, `{"name":"B"}`)["id"].(float64))
	invite := func(body string) map[string]any {
		return env.must(t, 201, "POST", env.orgPath("invites/"), env.owner, body)
	}
	count := func() float64 {
		return env.must(t, 200, "GET", env.orgPath("invites/"), env.owner, "")["count"].(float64)
	}

	invite(fmt.Sprintf(`{"target_email":"x@example.com","level":8,"private_project_access":[{"id":%d,"level":"member"}]}`, projectA))
	replaced := invite(`{"target_email":"X@example.com"}`)
	if count() != 1 || replaced["level"] != float64(1) || mustText(t, replaced["private_project_access"]) != "[]" {
		t.Fatalf("a new invite replaces the old one: %d invites, %v", int(count()), replaced)
	}

	invite(fmt.Sprintf(`{"target_email":"x@example.com","level":8,"private_project_access":[{"id":%d,"level":"member"},{"id":%d,"level":"member"}]}`, projectA, projectB))
	combined := invite(fmt.Sprintf(`{"target_email":"x@example.com","level":1,"combine_pending_invites":true,"private_project_access":[{"id":%d,"level":"admin"}]}`, projectA))
	want := fmt.Sprintf(`[{"id":%d,"level":"admin"},{"id":%d,"level":"member"}]`, projectA, projectB)
	if count() != 1 || combined["level"] != float64(8) || mustText(t, combined["private_project_access"]) != want {
		t.Fatalf("combined: %d invites, %v, want access %s", int(count()), combined, want)
	}

	// Expired invites are not combined, but replaced all the same.
	env.exec(t, `UPDATE meta.invites SET created_at = now() - INTERVAL 4 DAY`)
	expired := env.must(t, 200, "GET", env.orgPath("invites/"), env.owner, "")
	if !strings.Contains(mustText(t, expired), `"is_expired":true`) {
		t.Fatalf("an invite older than 3 days is expired: %v", expired)
	}
	fresh := invite(`{"target_email":"x@example.com","combine_pending_invites":true}`)
	if count() != 1 || fresh["level"] != float64(1) || fresh["is_expired"] != false {
		t.Fatalf("after an expired invite: %d invites, %v", int(count()), fresh)
	}
}

func TestInviteBulk(t *testing.T) {
	env := serveAPI(t, nil)
	_, memberKey := env.member(t, "member@example.com", levelMember, "organization_member:write")
	bulk := "/api/organizations/{org}/invites/bulk/"
	items := func(n int) string {
		var list []string
		for i := range n {
			list = append(list, fmt.Sprintf(`{"target_email":"bulk%d@example.com"}`, i))
		}
		return "[" + strings.Join(list, ",") + "]"
	}
	env.run(t, []scenario{
		{name: "not an array", method: "POST", path: bulk, key: env.owner, body: `{"target_email":"a@example.com"}`, status: 400,
			want: []string{`{"type":"validation_error","code":"invalid_input","detail":"This endpoint needs an array of data for bulk invite creation.","attr":null}`}},
		{name: "null is not an array", method: "POST", path: bulk, key: env.owner, body: `null`, status: 400,
			want: []string{`{"type":"validation_error","code":"invalid_input","detail":"This endpoint needs an array of data for bulk invite creation.","attr":null}`}},
		{name: "nor a string", method: "POST", path: bulk, key: env.owner, body: `"a@example.com"`, status: 400,
			want: []string{`"detail":"This endpoint needs an array of data for bulk invite creation."`}},
		{name: "nor a number", method: "POST", path: bulk, key: env.owner, body: ` 7 `, status: 400,
			want: []string{`"detail":"This endpoint needs an array of data for bulk invite creation."`}},
		{name: "nor no body", method: "POST", path: bulk, key: env.owner, status: 400,
			want: []string{`"detail":"This endpoint needs an array of data for bulk invite creation."`}},
		{name: "not JSON", method: "POST", path: bulk, key: env.owner, body: `[{`, status: 400, want: []string{`"code":"parse_error"`}},
		{name: "more than 20", method: "POST", path: bulk, key: env.owner, body: items(21), status: 400,
			want: []string{`{"type":"validation_error","code":"max_length","detail":"A maximum of 20 invites can be sent in a single request.","attr":null}`}},
		{name: "one bad item creates none", method: "POST", path: bulk, key: env.owner,
			body: `[{"target_email":"a@example.com"},{"target_email":"b@example.com"},{"first_name":"no address"}]`, status: 400,
			want: []string{`{"type":"validation_error","code":"required","detail":"This field is required.","attr":"2__target_email"}`}},
		{name: "an item of the wrong type", method: "POST", path: bulk, key: env.owner, body: `[{"target_email":"a@example.com","level":"x"}]`,
			status: 400, want: []string{`"attr":"0__level"`}},
		{name: "an item that is not an object", method: "POST", path: bulk, key: env.owner, body: `[{"target_email":"a@example.com"},7]`,
			status: 400, want: []string{`{"type":"validation_error","code":"invalid_input","detail":"Invalid data. Expected a dictionary, but got int.","attr":"1"}`}},
		{name: "an item that is a list", method: "POST", path: bulk, key: env.owner, body: `[[]]`,
			status: 400, want: []string{`{"type":"validation_error","code":"invalid_input","detail":"Invalid data. Expected a dictionary, but got list.","attr":"0"}`}},
		{name: "one item above the inviter's level creates none", method: "POST", path: bulk, key: memberKey,
			body: `[{"target_email":"a@example.com"},{"target_email":"b@example.com","level":8}]`, status: 403},
		{name: "nothing was created", method: "GET", path: "/api/organizations/{org}/invites/", key: env.owner, status: 200,
			want: []string{`"count":0`}},
		{name: "20 at once, 200 with no body", method: "POST", path: bulk, key: memberKey, body: items(20), status: 200},
		{name: "all created", method: "GET", path: "/api/organizations/{org}/invites/", key: env.owner, status: 200,
			want: []string{`"count":20`, `"target_email":"bulk0@example.com"`, `"target_email":"bulk19@example.com"`}},
	})
	status, _, text := env.call(t, "POST", env.orgPath("invites/bulk/"), env.owner, `[{"target_email":"one@example.com"}]`)
	if status != 200 || text != "" {
		t.Fatalf("bulk answers 200 with no body: %d %q", status, text)
	}
}

// An invite's id accepts it, so the list shows it only to members whose level is at
// least the invite's: a member cannot read an owner's invite and sign up as an owner.
// The invites themselves are all listed, to everyone.
func TestInviteIDsByLevel(t *testing.T) {
	env := serveAPI(t, nil)
	_, adminKey := env.member(t, "admin@example.com", levelAdmin, "organization_member:read")
	_, memberKey := env.member(t, "member@example.com", levelMember, "organization_member:read")
	invite := func(email string, level int) string {
		body := fmt.Sprintf(`{"target_email":%q,"level":%d}`, email, level)
		return env.must(t, 201, "POST", env.orgPath("invites/"), env.owner, body)["id"].(string)
	}
	ownerInvite, adminInvite, memberInvite := invite("boss@example.com", levelOwner), invite("adm@example.com", levelAdmin), invite("mem@example.com", levelMember)
	invites := "/api/organizations/{org}/invites/"
	env.run(t, []scenario{
		{name: "a member sees the ids of member invites only", method: "GET", path: invites, key: memberKey, status: 200,
			want: []string{`"count":3`, `"id":null,"target_email":"boss@example.com"`, `"id":null,"target_email":"adm@example.com"`,
				`"id":"` + memberInvite + `","target_email":"mem@example.com"`},
			notWant: []string{ownerInvite, adminInvite}},
		{name: "an admin those of admin and member invites", method: "GET", path: invites, key: adminKey, status: 200,
			want: []string{`"count":3`, `"id":null,"target_email":"boss@example.com"`, `"id":"` + adminInvite + `","target_email":"adm@example.com"`,
				`"id":"` + memberInvite + `"`},
			notWant: []string{ownerInvite}},
		{name: "an owner all of them", method: "GET", path: invites, key: env.owner, status: 200,
			want: []string{`"id":"` + ownerInvite + `","target_email":"boss@example.com"`, `"id":"` + adminInvite + `"`, `"id":"` + memberInvite + `"`}},
	})
}

// Invites list newest first, 100 to a page by default.
func TestInviteListOrderAndPages(t *testing.T) {
	env := serveAPI(t, nil)
	for _, email := range []string{"first@example.com", "second@example.com", "third@example.com"} {
		env.must(t, 201, "POST", env.orgPath("invites/"), env.owner, `{"target_email":"`+email+`"}`)
	}
	_, _, list := env.call(t, "GET", env.orgPath("invites/"), env.owner, "")
	inOrder(t, list, "third@example.com", "second@example.com", "first@example.com")

	for batch := range 6 {
		var items []string
		for i := range maxBulkInvites {
			items = append(items, fmt.Sprintf(`{"target_email":"bulk%d-%d@example.com","send_email":false}`, batch, i))
		}
		env.must(t, 200, "POST", env.orgPath("invites/bulk/"), env.owner, "["+strings.Join(items, ",")+"]")
	}
	page := env.must(t, 200, "GET", env.orgPath("invites/"), env.owner, "")
	next := env.url + env.orgPath("invites/?limit=100&offset=100")
	if page["count"] != float64(123) || len(page["results"].([]any)) != 100 || page["next"] != next || page["previous"] != nil {
		t.Fatalf("first page: count %v, %d results, next %v, previous %v", page["count"], len(page["results"].([]any)), page["next"], page["previous"])
	}
	// Newest first: the last bulk's invites lead, the first three invites end the list.
	if first := page["results"].([]any)[0].(map[string]any); !strings.HasPrefix(first["target_email"].(string), "bulk5-") {
		t.Fatalf("first of the page: %v", first["target_email"])
	}
	last := env.must(t, 200, "GET", env.orgPath("invites/?limit=100&offset=100"), env.owner, "")
	results := last["results"].([]any)
	if len(results) != 23 || last["next"] != nil || results[22].(map[string]any)["target_email"] != "first@example.com" {
		t.Fatalf("second page: %d results, next %v", len(results), last["next"])
	}
}

// Invites are e-mailed through a real SMTP server when send_email (default true).
func TestInviteMail(t *testing.T) {
	smtpURL, box := startSMTP(t)
	env := serveAPI(t, func(cfg *Config) { cfg.SMTPURL = smtpURL; cfg.PublicURL = "https://hedge.example.com" })
	env.exec(t, `UPDATE meta.users SET first_name = 'Grace', last_name = 'Hopper' WHERE email = 'owner@example.com'`)
	env.exec(t, `UPDATE meta.organizations SET name = 'Acme Ünited' WHERE id = ?`, env.org)

	created := env.must(t, 201, "POST", env.orgPath("invites/"), env.owner, `{"target_email":"ada@example.com","first_name":"Ada","message":"Welcome aboard"}`)
	if created["emailing_attempt_made"] != true {
		t.Fatalf("emailing_attempt_made: %v", created)
	}
	m := receive(t, box)
	if m.from != "hedge@example.com" || len(m.to) != 1 || m.to[0] != "ada@example.com" {
		t.Fatalf("envelope from %q to %v", m.from, m.to)
	}
	msg, err := mail.ReadMessage(strings.NewReader(m.data))
	if err != nil {
		t.Fatal(err)
	}
	subject, err := new(mime.WordDecoder).DecodeHeader(msg.Header.Get("Subject"))
	if err != nil || subject != "Grace Hopper invited you to join Acme Ünited on hedge" {
		t.Fatalf("subject %q %v", subject, err)
	}
	body, _ := io.ReadAll(quotedprintable.NewReader(msg.Body))
	for _, want := range []string{"Hi Ada,", "Welcome aboard", "https://hedge.example.com/api/signup/" + created["id"].(string) + "/",
		"open https://hedge.example.com/signup/" + created["id"].(string) + " and choose a password", "expires in 3 days"} {
		if !strings.Contains(string(body), want) {
			t.Fatalf("mail body lacks %q:\n%s", want, body)
		}
	}

	quiet := env.must(t, 201, "POST", env.orgPath("invites/"), env.owner, `{"target_email":"quiet@example.com","send_email":false}`)
	if quiet["emailing_attempt_made"] != false {
		t.Fatalf("send_email false: %v", quiet)
	}
	env.must(t, 200, "POST", env.orgPath("invites/bulk/"), env.owner,
		`[{"target_email":"b1@example.com"},{"target_email":"b2@example.com","send_email":false},{"target_email":"b3@example.com"}]`)
	for _, want := range []string{"b1@example.com", "b3@example.com"} {
		if m := receive(t, box); m.to[0] != want {
			t.Fatalf("bulk mail to %v, want %s", m.to, want)
		}
	}
	select {
	case m := <-box:
		t.Fatalf("unexpected mail to %v", m.to)
	case <-time.After(200 * time.Millisecond):
	}
}

func receive(t *testing.T, box <-chan receivedMail) receivedMail {
	t.Helper()
	select {
	case m := <-box:
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("no mail arrived")
	}
	return receivedMail{}
}

// The rule of every invite path: a caller deals only with invites it could have made,
// whose level is at most its own and whose private projects it may grant. A pending
// invite beyond it is neither combined nor replaced, alone or in a bulk request (which
// then creates nothing); the list hides the id of such an invite; an expired invite,
// which nobody can accept any more, is replaced by anyone.
func TestInviteReach(t *testing.T) {
	env := serveAPI(t, nil)
	_, adminKey := env.member(t, "admin@example.com", levelAdmin, "organization_member:write")
	_, memberKey := env.member(t, "member@example.com", levelMember, "organization_member:write")
	private := int(env.must(t, 201, "POST", env.orgPath("projects/"), env.owner, `{"name":"Private","access_control":true}`)["id"].(float64))
	invites := "/api/organizations/{org}/invites/"
	beyond := `{"type":"authentication_error","code":"permission_denied","detail":"You cannot replace or combine an invite that grants more access than you may grant.","attr":null}`

	// An admin's member-level invite to a private project: beyond a member's reach.
	privateInvite := env.must(t, 201, "POST", env.orgPath("invites/"), adminKey,
		fmt.Sprintf(`{"target_email":"p@example.com","private_project_access":[{"id":%d,"level":"admin"}]}`, private))["id"].(string)
	ownerInvite := env.must(t, 201, "POST", env.orgPath("invites/"), env.owner, `{"target_email":"boss@example.com","level":15}`)["id"].(string)
	env.run(t, []scenario{
		{name: "a member combines with a private project it may not grant", method: "POST", path: invites, key: memberKey,
			body: `{"target_email":"p@example.com","combine_pending_invites":true}`, status: 403, want: []string{beyond}},
		{name: "nor replaces it", method: "POST", path: invites, key: memberKey, body: `{"target_email":"p@example.com"}`, status: 403, want: []string{beyond}},
		{name: "a bulk request with one such item creates nothing", method: "POST", path: invites + "bulk/", key: memberKey,
			body: `[{"target_email":"fine@example.com"},{"target_email":"boss@example.com","combine_pending_invites":true}]`, status: 403, want: []string{beyond}},
		{name: "the list hides the ids of both from a member", method: "GET", path: invites, key: memberKey, status: 200,
			want:    []string{`"count":2`, `"id":null,"target_email":"boss@example.com"`, `"id":null,"target_email":"p@example.com"`},
			notWant: []string{privateInvite, ownerInvite, "fine@example.com"}},
		{name: "an admin sees the private project's", method: "GET", path: invites, key: adminKey, status: 200,
			want: []string{`"id":"` + privateInvite + `","target_email":"p@example.com"`, `"id":null,"target_email":"boss@example.com"`}},
		{name: "and combines it", method: "POST", path: invites, key: adminKey, body: `{"target_email":"p@example.com","level":8,"combine_pending_invites":true}`,
			status: 201, want: []string{`"level":8`, fmt.Sprintf(`"private_project_access":[{"id":%d,"level":"admin"}]`, private)}},
	})
	// Refused, the owner's invite is still there to accept.
	if status, _, text := env.call(t, "POST", "/api/signup/"+ownerInvite+"/", "", `{"first_name":"Boss"}`); status != 201 || !strings.Contains(text, `"membership_level":15`) {
		t.Fatalf("the owner's invite after refused combines: %d %s", status, text)
	}

	// Expired, an owner's invite can no longer be accepted: a member replaces it.
	env.must(t, 201, "POST", env.orgPath("invites/"), env.owner, `{"target_email":"late@example.com","level":15}`)
	env.exec(t, `UPDATE meta.invites SET created_at = now() - INTERVAL 4 DAY WHERE target_email = 'late@example.com'`)
	fresh := env.must(t, 201, "POST", env.orgPath("invites/"), memberKey, `{"target_email":"late@example.com","combine_pending_invites":true}`)
	if fresh["level"] != float64(levelMember) || fresh["id"] == nil {
		t.Fatalf("a member's invite over an expired owner's one: %v", fresh)
	}
}

// Whoever made an invite holds its id, which accepts it: an invite is never left
// beyond its maker. When a member's level drops, the invites it made that it could no
// longer make are revoked; when it leaves or is removed, all of them.
func TestInvitesOfDemotedMaker(t *testing.T) {
	env := serveAPI(t, nil)
	adminUUID, adminKey := env.member(t, "admin@example.com", levelAdmin, "organization_member:write")
	_, leaverKey := env.member(t, "leaver@example.com", levelAdmin, "organization_member:write")
	removedUUID, removedKey := env.member(t, "removed@example.com", levelMember, "organization_member:write")
	private := int(env.must(t, 201, "POST", env.orgPath("projects/"), env.owner, `{"name":"Private","access_control":true}`)["id"].(float64))
	invite := func(key, body string) string {
		return env.must(t, 201, "POST", env.orgPath("invites/"), key, body)["id"].(string)
	}
	adminLevel := invite(adminKey, `{"target_email":"a1@example.com","level":8}`)
	privateProject := invite(adminKey, fmt.Sprintf(`{"target_email":"a2@example.com","private_project_access":[{"id":%d,"level":"member"}]}`, private))
	memberLevel := invite(adminKey, `{"target_email":"a3@example.com"}`)
	byLeaver := invite(leaverKey, `{"target_email":"l1@example.com"}`)
	byRemoved := invite(removedKey, `{"target_email":"r1@example.com"}`)
	byOwner := invite(env.owner, `{"target_email":"o1@example.com","level":8}`)

	env.must(t, 200, "PATCH", env.orgPath("members/"+adminUUID+"/"), env.owner, `{"level":1}`)
	env.must(t, 204, "DELETE", env.orgPath("members/@me/"), leaverKey, "")
	env.must(t, 204, "DELETE", env.orgPath("members/"+removedUUID+"/"), env.owner, "")

	left := map[string]bool{}
	for _, r := range env.must(t, 200, "GET", env.orgPath("invites/"), env.owner, "")["results"].([]any) {
		left[r.(map[string]any)["id"].(string)] = true
	}
	for id, want := range map[string]bool{adminLevel: false, privateProject: false, memberLevel: true, byLeaver: false, byRemoved: false, byOwner: true} {
		if left[id] != want {
			t.Errorf("invite %s: kept %v, want %v", id, left[id], want)
		}
	}
	env.run(t, []scenario{{name: "a revoked invite accepts nobody", method: "POST", path: "/api/signup/" + adminLevel + "/", body: `{"first_name":"A"}`,
		status: 400, want: []string{`"detail":"The provided invite ID is not valid."`}}})
}
