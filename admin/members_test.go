package admin

import (
	"sync"
	"testing"

	"github.com/google/uuid"
)

func TestMembers(t *testing.T) {
	env := serveAPI(t, nil)
	ownerUUID := env.userUUID(t, "owner@example.com")
	adminUUID, adminKey := env.member(t, "admin@example.com", levelAdmin, "organization_member:write")
	admin2UUID, _ := env.member(t, "admin2@example.com", levelAdmin, "*")
	memberUUID, memberKey := env.member(t, "member@example.com", levelMember, "organization_member:write")
	member2UUID, member2Key := env.member(t, "member2@example.com", levelMember, "organization_member:write")
	_, outsiderKey := env.addUser(t, "outsider@example.com", uuid.Nil, levelOwner, "*")
	outsiderUUID := env.userUUID(t, "outsider@example.com")
	members := "/api/organizations/{org}/members/"
	denied := func(detail string) []string {
		return []string{`{"type":"authentication_error","code":"permission_denied","detail":"` + detail + `","attr":null}`}
	}

	_, _, list := env.call(t, "GET", env.orgPath("members/"), memberKey, "")
	inOrder(t, list, "member2@", "member@", "admin2@", "admin@", "owner@")
	env.run(t, []scenario{
		{name: "list, newest joined first", method: "GET", path: members, key: memberKey, status: 200,
			want: []string{`"count":5`, `"results":[{"id":"`, `"user":{"id":5,"uuid":"` + member2UUID + `"`,
				`"email":"member2@example.com"`, `"level":1`, `"is_2fa_enabled":false,"has_social_auth":false,"last_login":null`}},
		{name: "oldest first on request", method: "GET", path: members + "?order=joined_at&limit=1", key: memberKey, status: 200,
			want: []string{`"email":"owner@example.com"`, `"next":"`}},
		{name: "an unknown order", method: "GET", path: members + "?order=level", key: memberKey, status: 400,
			want: []string{`"code":"invalid_choice"`, `"attr":"order"`}},
		{name: "by e-mail, any case", method: "GET", path: members + "?email=ADMIN@example.com", key: memberKey, status: 200,
			want: []string{`"count":1`, `"uuid":"` + adminUUID + `"`}},
		{name: "another tenant's members", method: "GET", path: members, key: outsiderKey, status: 404,
			want: []string{`"detail":"Organization not found."`}},

		// PATCH: PostHog's rules, in its order.
		{name: "nobody changes their own level", method: "PATCH", path: members + ownerUUID + "/", key: env.owner, body: `{"level":8}`,
			status: 403, want: denied("You can't change your own access level.")},
		{name: "not even through @me", method: "PATCH", path: members + "@me/", key: adminKey, body: `{"level":8}`,
			status: 403, want: denied("You can't change your own access level.")},
		{name: "only owners make owners", method: "PATCH", path: members + memberUUID + "/", key: adminKey, body: `{"level":15}`,
			status: 403, want: denied("You can only make another member owner if you're this organization's owner.")},
		{name: "nobody raises anyone above their own level", method: "PATCH", path: members + member2UUID + "/", key: memberKey,
			body: `{"level":8}`, status: 403, want: denied("You can only change access level of others to lower or equal to your current one.")},
		{name: "members edit nobody", method: "PATCH", path: members + member2UUID + "/", key: memberKey, body: `{"level":1}`,
			status: 403, want: denied("You can only edit others if you are an admin.")},
		{name: "admins do not edit owners", method: "PATCH", path: members + ownerUUID + "/", key: adminKey, body: `{"level":8}`,
			status: 403, want: denied("You can only edit others with level lower or equal to you.")},
		{name: "admins make admins", method: "PATCH", path: members + memberUUID + "/", key: adminKey, body: `{"level":8}`,
			status: 200, want: []string{`"uuid":"` + memberUUID + `"`, `"level":8`}},
		{name: "admins demote admins", method: "PATCH", path: members + memberUUID + "/", key: adminKey, body: `{"level":1}`,
			status: 200, want: []string{`"level":1`}},
		{name: "owners make owners", method: "PATCH", path: members + admin2UUID + "/", key: env.owner, body: `{"level":15}`,
			status: 200, want: []string{`"uuid":"` + admin2UUID + `"`, `"level":15`}},
		{name: "a level that is not 1, 8 or 15", method: "PATCH", path: members + memberUUID + "/", key: env.owner, body: `{"level":3}`,
			status: 400, want: []string{`{"type":"validation_error","code":"invalid_choice","detail":"\"3\" is not a valid choice.","attr":"level"}`}},
		{name: "a level of the wrong type", method: "PATCH", path: members + memberUUID + "/", key: env.owner, body: `{"level":"admin"}`,
			status: 400, want: []string{`{"type":"validation_error","code":"invalid_input","detail":"A valid integer is required.","attr":"level"}`}},
		{name: "a level that is a float", method: "PATCH", path: members + memberUUID + "/", key: env.owner, body: `{"level":1.5}`,
			status: 400, want: []string{`"detail":"A valid integer is required."`, `"attr":"level"`}},
		{name: "a user who is not a member", method: "PATCH", path: members + outsiderUUID + "/", key: env.owner, body: `{"level":1}`,
			status: 404, want: []string{`{"type":"invalid_request","code":"not_found","detail":"Not found.","attr":null}`}},
		{name: "no such user", method: "PATCH", path: members + uuid.NewString() + "/", key: env.owner, body: `{"level":1}`, status: 404},
		{name: "not a uuid", method: "PATCH", path: members + "42/", key: env.owner, body: `{"level":1}`, status: 404},

		// Without level nothing changes, but the same permission checks apply.
		{name: "a member may not PATCH the owner, even with nothing to change", method: "PATCH", path: members + ownerUUID + "/",
			key: memberKey, body: `{}`, status: 403, want: denied("You can only edit others if you are an admin.")},
		{name: "nor with only fields that are not writable", method: "PATCH", path: members + ownerUUID + "/",
			key: memberKey, body: `{"joined_at":"2020-01-01T00:00:00Z"}`, status: 403, want: denied("You can only edit others if you are an admin.")},
		{name: "nor with no body", method: "PATCH", path: members + member2UUID + "/", key: memberKey, status: 403,
			want: denied("You can only edit others if you are an admin.")},
		{name: "an admin may not PATCH an owner without level", method: "PATCH", path: members + ownerUUID + "/", key: adminKey, body: `{}`,
			status: 403, want: denied("You can only edit others with level lower or equal to you.")},
		{name: "an admin PATCHes a member without level: unchanged", method: "PATCH", path: members + memberUUID + "/", key: adminKey,
			body: `{}`, status: 200, want: []string{`"uuid":"` + memberUUID + `"`, `"level":1`}},
		{name: "anyone PATCHes themselves without level", method: "PATCH", path: members + "@me/", key: memberKey, body: `{}`,
			status: 200, want: []string{`"uuid":"` + memberUUID + `"`, `"level":1`}},

		// DELETE: owners neither leave nor are removed.
		{name: "members remove nobody", method: "DELETE", path: members + member2UUID + "/", key: memberKey,
			status: 403, want: denied("You can only edit others if you are an admin.")},
		{name: "admins do not remove owners", method: "DELETE", path: members + admin2UUID + "/", key: adminKey,
			status: 403, want: denied("You can only edit others with level lower or equal to you.")},
		{name: "admins remove members", method: "DELETE", path: members + memberUUID + "/", key: adminKey, status: 204},
		{name: "removed", method: "GET", path: members, key: env.owner, status: 200, want: []string{`"count":4`}, notWant: []string{memberUUID}},
		{name: "a member leaves", method: "DELETE", path: members + "@me/", key: member2Key, status: 204},
		{name: "who left has no access", method: "GET", path: members, key: member2Key, status: 404},
		{name: "an owner cannot leave, though another owner stays", method: "DELETE", path: members + "@me/", key: env.owner, status: 400,
			want: []string{`{"type":"validation_error","code":"invalid_input","detail":"Cannot leave the organization as its owner!","attr":null}`}},
		{name: "nor by their uuid", method: "DELETE", path: members + ownerUUID + "/", key: env.owner, status: 400,
			want: []string{`"detail":"Cannot leave the organization as its owner!"`}},
		{name: "an owner does not remove another owner", method: "DELETE", path: members + admin2UUID + "/", key: env.owner, status: 400,
			want: []string{`{"type":"validation_error","code":"invalid_input","detail":"Cannot leave the organization as its owner!","attr":null}`}},
		{name: "but may make them an admin", method: "PATCH", path: members + admin2UUID + "/", key: env.owner, body: `{"level":8}`,
			status: 200, want: []string{`"level":8`}},
		{name: "and then remove them", method: "DELETE", path: members + admin2UUID + "/", key: env.owner, status: 204},
		{name: "the last owner cannot leave", method: "DELETE", path: members + "@me/", key: env.owner, status: 400,
			want: []string{`{"type":"validation_error","code":"invalid_input","detail":"Cannot leave the organization as its owner!","attr":null}`}},
		{name: "an admin leaves", method: "DELETE", path: members + adminUUID + "/", key: adminKey, status: 204},
		{name: "the owner stays", method: "GET", path: members, key: env.owner, status: 200,
			want: []string{`"count":1`, `"level":15`}},
	})
}

// Two owners demoting each other at once: one succeeds, and the other, no longer an
// owner when its turn comes, may not touch an owner; the organization keeps one.
func TestMembersLastOwnerRace(t *testing.T) {
	env := serveAPI(t, nil)
	ownerUUID := env.userUUID(t, "owner@example.com")
	secondUUID, secondOwner := env.member(t, "second@example.com", levelOwner, "*")
	for round := range 3 {
		var wg sync.WaitGroup
		statuses := make([]int, 2)
		for i, c := range []struct{ key, target string }{{env.owner, secondUUID}, {secondOwner, ownerUUID}} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				statuses[i], _, _ = env.do(t, "PATCH", env.orgPath("members/"+c.target+"/"), c.key, nil, `{"level":8}`)
			}()
		}
		wg.Wait()
		if statuses[0]+statuses[1] != 200+403 || (statuses[0] != 200 && statuses[1] != 200) {
			t.Fatalf("round %d: statuses %v, want one 200 and one 403", round, statuses)
		}
		var owners int
		if err := env.warehouse.DB().QueryRow(`SELECT count(*) FROM meta.memberships WHERE organization_id = ? AND level = 15`, env.org).Scan(&owners); err != nil {
			t.Fatal(err)
		}
		if owners != 1 {
			t.Fatalf("round %d: %d owners", round, owners)
		}
		// Both owners again for the next round.
		env.exec(t, `UPDATE meta.memberships SET level = 15 WHERE organization_id = ?`, env.org)
	}
}
