package admin

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/hedge-analytics/hedge/warehouse"
)

// noProjectAccess is the answer to a member of the organization on a private project
// they were not added to.
const noProjectAccess = `{"type":"authentication_error","code":"permission_denied","detail":"You don't have access to the project.","attr":null}`

// privateProject makes a private project of the bootstrap organization (as its owner)
// and returns its id, its /api/projects/{id} path and its API token.
func (env *testEnv) privateProject(t *testing.T, name string) (int64, string, string) {
	t.Helper()
	p := env.must(t, 201, "POST", env.orgPath("projects/"), env.owner, fmt.Sprintf(`{"name":%q,"access_control":true}`, name))
	id := int64(p["id"].(float64))
	return id, fmt.Sprintf("/api/projects/%d", id), p["api_token"].(string)
}

// addExplicit adds the user as an explicit member of a private project (as the owner).
func (env *testEnv) addExplicit(t *testing.T, projectPath, userUUID string, level int) {
	t.Helper()
	env.must(t, 201, "POST", projectPath+"/explicit_members/", env.owner, fmt.Sprintf(`{"user_uuid":%q,"level":%d}`, userUUID, level))
}

// A private project's events are not the organization's: a plain member reads them
// through /query/ only once added to the project; admins and owners always do.
// Turning access_control off opens the project to every member again; a member who
// leaves the organization loses the explicit access with the membership, and does not
// get it back by joining again.
func TestPrivateProjectQuery(t *testing.T) {
	env := newTestEnv(t, "")
	id, project, _ := env.privateProject(t, "Private")
	env.ingestTo(t, id, warehouse.Event{Name: "secret", DistinctID: "u1", Timestamp: time.Now().UTC().Add(-time.Hour)})
	_, memberKey := env.member(t, "member@example.com", levelMember, "*")
	explicitUUID, explicitKey := env.member(t, "explicit@example.com", levelMember, "*")
	_, adminKey := env.member(t, "admin@example.com", levelAdmin, "*")
	env.addExplicit(t, project, explicitUUID, explicitMember)
	const selectEvents = `{"query": {"kind": "HogQLQuery", "query": "SELECT event FROM events"}}`
	query := func(name, key string, wantStatus int, want string) {
		t.Helper()
		status, _, text := env.call(t, "POST", project+"/query/", key, selectEvents)
		if status != wantStatus || !strings.Contains(text, want) {
			t.Fatalf("%s: %d %s, want %d %s", name, status, text, wantStatus, want)
		}
	}
	query("a member not added to the project", memberKey, 403, noProjectAccess)
	query("an explicit member", explicitKey, 200, "secret")
	query("an admin of the organization", adminKey, 200, "secret")
	query("the owner", env.owner, 200, "secret")

	env.exec(t, `UPDATE meta.projects SET access_control = false WHERE id = ?`, id) // hedge has no project update route
	query("any member once the project is not private", memberKey, 200, "secret")
	env.exec(t, `UPDATE meta.projects SET access_control = true WHERE id = ?`, id)
	query("a member once the project is private again", memberKey, 403, noProjectAccess)

	env.must(t, 204, "DELETE", env.orgPath("members/"+explicitUUID+"/"), env.owner, "")
	query("an explicit member removed from the organization", explicitKey, 404, `"detail":"Project not found."`)
	var left int
	if err := env.warehouse.DB().QueryRow(`SELECT count(*) FROM meta.explicit_project_members`).Scan(&left); err != nil || left != 0 {
		t.Fatalf("explicit memberships after the member left: %d %v", left, err)
	}
	if err := insertMembership(t.Context(), env.warehouse.DB(), env.org, env.userID(t, "explicit@example.com"), levelMember); err != nil {
		t.Fatal(err)
	}
	query("a former explicit member who joins again", explicitKey, 403, noProjectAccess)
}

// A private project is listed (projects, an organization's teams, the user's current
// team) and retrieved only by those who reach it, with their effective level.
func TestPrivateProjectVisibility(t *testing.T) {
	env := newTestEnv(t, "")
	// The bootstrap project, the organization's first, is made private, so that a
	// member's current team is the next project they reach.
	env.exec(t, `UPDATE meta.projects SET access_control = true WHERE id = ?`, env.boot.ProjectID)
	boot := fmt.Sprintf("/api/projects/%d", env.boot.ProjectID)
	open := env.must(t, 201, "POST", env.orgPath("projects/"), env.owner, `{"name":"Open"}`)
	_, memberKey := env.member(t, "member@example.com", levelMember, "*")
	explicitUUID, explicitKey := env.member(t, "explicit@example.com", levelMember, "*")
	projectAdminUUID, projectAdminKey := env.member(t, "padmin@example.com", levelMember, "*")
	_, adminKey := env.member(t, "admin@example.com", levelAdmin, "*")
	env.addExplicit(t, boot, explicitUUID, explicitMember)
	env.addExplicit(t, boot, projectAdminUUID, explicitAdmin)
	retrieve := env.orgPath(fmt.Sprintf("projects/%d/", env.boot.ProjectID))
	env.run(t, []scenario{
		{name: "a member's list", method: "GET", path: env.orgPath("projects/"), key: memberKey, status: 200,
			want: []string{`"count":1`, `"name":"Open"`}, notWant: []string{`"name":"Default project"`}},
		{name: "a member's organization", method: "GET", path: env.orgPath(""), key: memberKey, status: 200,
			want: []string{`"name":"Open"`}, notWant: []string{`"name":"Default project"`}},
		{name: "a member's current team", method: "GET", path: "/api/users/@me/", key: memberKey, status: 200,
			want: []string{fmt.Sprintf(`"team":{"id":%d,`, int64(open["id"].(float64)))}},
		{name: "a member retrieves", method: "GET", path: retrieve, key: memberKey, status: 404,
			want: []string{`{"type":"invalid_request","code":"not_found","detail":"Project not found.","attr":null}`}},
		{name: "an explicit member's list", method: "GET", path: env.orgPath("projects/"), key: explicitKey, status: 200,
			want: []string{`"count":2`, `"name":"Default project"`}},
		{name: "an explicit member's current team", method: "GET", path: "/api/users/@me/", key: explicitKey, status: 200,
			want: []string{fmt.Sprintf(`"team":{"id":%d,`, env.boot.ProjectID)}},
		{name: "an explicit member retrieves", method: "GET", path: retrieve, key: explicitKey, status: 200,
			want: []string{`"effective_membership_level":1,`, `"access_control":true`}},
		{name: "a member made admin of the project", method: "GET", path: retrieve, key: projectAdminKey, status: 200,
			want: []string{`"effective_membership_level":8,`}},
		{name: "an admin's list", method: "GET", path: env.orgPath("projects/"), key: adminKey, status: 200, want: []string{`"count":2`}},
		{name: "an admin retrieves", method: "GET", path: retrieve, key: adminKey, status: 200, want: []string{`"effective_membership_level":8,`}},
		{name: "the owner retrieves", method: "GET", path: retrieve, key: env.owner, status: 200, want: []string{`"effective_membership_level":15,`}},
		{name: "a member scopes a key to it", method: "POST", path: "/api/personal_api_keys/", key: memberKey,
			body: fmt.Sprintf(`{"label":"k","scopes":["*"],"scoped_teams":[%d]}`, env.boot.ProjectID), status: 400,
			want: []string{`"detail":"You must be a member of all teams that you are scoping the key to."`}},
		{name: "an explicit member scopes a key to it", method: "POST", path: "/api/personal_api_keys/", key: explicitKey,
			body: fmt.Sprintf(`{"label":"k","scopes":["*"],"scoped_teams":[%d]}`, env.boot.ProjectID), status: 201},
	})
	// A member who creates a private (demo) project is not shut out of it.
	demo := env.must(t, 201, "POST", env.orgPath("projects/"), memberKey, `{"name":"Mine","is_demo":true,"access_control":true}`)
	if demo["effective_membership_level"] != float64(levelAdmin) {
		t.Fatalf("the creator's level in their private project: %v", demo["effective_membership_level"])
	}
	env.must(t, 200, "GET", fmt.Sprintf("/api/projects/%d/dashboards/", int64(demo["id"].(float64))), memberKey, "")
}

// Batch exports of a private project, under the organization and under the project:
// a member not added to it neither lists nor reaches them, nor creates one.
func TestPrivateProjectBatchExports(t *testing.T) {
	env := newTestEnv(t, "")
	id, project, _ := env.privateProject(t, "Private")
	body := func(team int64) string {
		return fmt.Sprintf(`{"name":"e","interval":"hour","team_id":%d,"destination":{"type":"Parquet","config":{"path":"exports"}}}`, team)
	}
	private := env.must(t, 201, "POST", env.orgPath("batch_exports/"), env.owner, body(id))["id"].(string)
	env.must(t, 201, "POST", env.orgPath("batch_exports/"), env.owner, body(env.boot.ProjectID))
	_, memberKey := env.member(t, "member@example.com", levelMember, "*")
	explicitUUID, explicitKey := env.member(t, "explicit@example.com", levelMember, "*")
	env.addExplicit(t, project, explicitUUID, explicitMember)
	env.run(t, []scenario{
		{name: "a member lists the organization's", method: "GET", path: env.orgPath("batch_exports/"), key: memberKey, status: 200,
			want: []string{`"count":1`, fmt.Sprintf(`"team_id":%d`, env.boot.ProjectID)}, notWant: []string{private}},
		{name: "a member retrieves one under the organization", method: "GET", path: env.orgPath("batch_exports/" + private + "/"), key: memberKey,
			status: 404},
		{name: "a member pauses one under the organization", method: "POST", path: env.orgPath("batch_exports/" + private + "/pause/"), key: memberKey,
			status: 404},
		{name: "a member's runs under the organization", method: "GET", path: env.orgPath("batch_exports/" + private + "/runs/"), key: memberKey,
			status: 404},
		{name: "a member creates one under the organization", method: "POST", path: env.orgPath("batch_exports/"), key: memberKey, body: body(id),
			status: 403, want: []string{noProjectAccess}},
		{name: "a member lists the project's", method: "GET", path: project + "/batch_exports/", key: memberKey, status: 403, want: []string{noProjectAccess}},
		{name: "a member retrieves one under the project", method: "GET", path: project + "/batch_exports/" + private + "/", key: memberKey,
			status: 403, want: []string{noProjectAccess}},
		{name: "an explicit member lists the organization's", method: "GET", path: env.orgPath("batch_exports/"), key: explicitKey, status: 200,
			want: []string{`"count":2`, private}},
		{name: "an explicit member pauses one", method: "POST", path: env.orgPath("batch_exports/" + private + "/pause/"), key: explicitKey,
			status: 200},
	})
}

// The server SDKs' definitions of a private project, fetched with a member's key.
func TestPrivateProjectFlagDefinitions(t *testing.T) {
	env := newTestEnv(t, "")
	_, project, token := env.privateProject(t, "Private")
	_, memberKey := env.member(t, "member@example.com", levelMember, "feature_flag:read")
	explicitUUID, explicitKey := env.member(t, "explicit@example.com", levelMember, "feature_flag:read")
	env.addExplicit(t, project, explicitUUID, explicitMember)
	env.run(t, []scenario{
		{name: "a member not added", method: "GET", path: "/flags/definitions?token=" + token, key: memberKey, status: 403, want: []string{noProjectAccess}},
		{name: "the older path", method: "GET", path: "/api/feature_flag/local_evaluation?token=" + token, key: memberKey, status: 403,
			want: []string{noProjectAccess}},
		{name: "remote config", method: "GET", path: "/api/projects/@current/feature_flags/x/remote_config?token=" + token, key: memberKey,
			status: 403, want: []string{noProjectAccess}},
		{name: "an explicit member", method: "GET", path: "/flags/definitions?token=" + token, key: explicitKey, status: 200, want: []string{`"flags":[]`}},
	})
}

// A collaborator of a private project's dashboard must reach the project; its explicit
// admins, like the organization's admins, edit every dashboard already.
func TestPrivateProjectCollaborators(t *testing.T) {
	env := newTestEnv(t, "")
	_, project, _ := env.privateProject(t, "Private")
	d := env.must(t, 201, "POST", project+"/dashboards/", env.owner, `{"name":"Restricted","restriction_level":37}`)
	collaborators := fmt.Sprintf("%s/dashboards/%d/collaborators/", project, int64(d["id"].(float64)))
	memberUUID, _ := env.member(t, "member@example.com", levelMember, "*")
	explicitUUID, explicitKey := env.member(t, "explicit@example.com", levelMember, "*")
	projectAdminUUID, projectAdminKey := env.member(t, "padmin@example.com", levelMember, "*")
	env.addExplicit(t, project, explicitUUID, explicitMember)
	env.addExplicit(t, project, projectAdminUUID, explicitAdmin)
	add := func(user string) string { return `{"user_uuid":"` + user + `","level":37}` }
	env.run(t, []scenario{
		env.refused("a member not added to the project", "POST", collaborators, add(memberUUID), "user_uuid", "invalid_input",
			"Cannot add collaborators that have no access to the project."),
		env.refused("an explicit admin of the project", "POST", collaborators, add(projectAdminUUID), "user_uuid", "invalid_input",
			"Cannot add collaborators that already have inherent access (the dashboard owner or a project admins)."),
		{name: "an explicit member may not edit the dashboard", method: "PATCH", path: strings.TrimSuffix(collaborators, "collaborators/"),
			key: explicitKey, body: `{"name":"x"}`, status: 403, want: []string{`"detail":"You don't have edit permissions for this dashboard."`}},
		{name: "an explicit admin may", method: "PATCH", path: strings.TrimSuffix(collaborators, "collaborators/"),
			key: projectAdminKey, body: `{"name":"x"}`, status: 200},
		{name: "an explicit member", method: "POST", path: collaborators, key: env.owner, body: add(explicitUUID), status: 201,
			want: []string{`"level":37`}},
	})
}

// An invite's private_project_access makes the new member an explicit member of
// those private projects, at its levels.
func TestInviteGrantsPrivateProjects(t *testing.T) {
	env := newTestEnv(t, "")
	id, project, _ := env.privateProject(t, "Private")
	invite := env.must(t, 201, "POST", env.orgPath("invites/"), env.owner,
		fmt.Sprintf(`{"target_email":"new@example.com","private_project_access":[{"id":%d,"level":"admin"},{"id":%d,"level":"member"}]}`,
			id, env.boot.ProjectID))
	answer := env.must(t, 201, "POST", "/api/signup/"+invite["id"].(string)+"/", "", `{"first_name":"New"}`)
	key := answer["personal_api_key"].(string)
	env.run(t, []scenario{
		{name: "the new member reaches the private project as its admin", method: "GET", path: env.orgPath(fmt.Sprintf("projects/%d/", id)),
			key: key, status: 200, want: []string{`"effective_membership_level":8,`}},
		{name: "listed as its explicit member", method: "GET", path: project + "/explicit_members/", key: key, status: 200,
			want: []string{`"level":8,"parent_level":1,`, `"email":"new@example.com"`, `"effective_level":8}]`}},
	})
	// The project that is not private got no explicit member.
	var n int
	if err := env.warehouse.DB().QueryRow(`SELECT count(*) FROM meta.explicit_project_members WHERE team_id = ?`, env.boot.ProjectID).Scan(&n); err != nil || n != 0 {
		t.Fatalf("explicit members of the open project: %d %v", n, err)
	}
}

// /api/projects/{id}/explicit_members/, with PostHog's rules.
func TestExplicitMembers(t *testing.T) {
	env := newTestEnv(t, "")
	_, project, _ := env.privateProject(t, "Private")
	members := project + "/explicit_members/"
	open := fmt.Sprintf("/api/projects/%d/explicit_members/", env.boot.ProjectID)
	ownerUUID := env.userUUID(t, "owner@example.com")
	aUUID, aKey := env.member(t, "a@example.com", levelMember, "*")
	bUUID, bKey := env.member(t, "b@example.com", levelMember, "*")
	cUUID, _ := env.member(t, "c@example.com", levelMember, "*")
	_, outsiderKey := env.addUser(t, "outsider@example.com", uuid.Nil, levelOwner, "*")
	outsiderUUID := env.userUUID(t, "outsider@example.com")
	_, readOnlyKey := env.member(t, "ro@example.com", levelAdmin, "project:read")
	insufficient := `{"type":"authentication_error","code":"permission_denied","detail":"You don't have sufficient permissions in the project.","attr":null}`
	denied := func(detail string) string {
		return fmt.Sprintf(`{"type":"authentication_error","code":"permission_denied","detail":%q,"attr":null}`, detail)
	}
	add := func(user string, level int) string { return fmt.Sprintf(`{"user_uuid":%q,"level":%d}`, user, level) }
	env.run(t, []scenario{
		{name: "the owner adds a member", method: "POST", path: members, key: env.owner, body: `{"user_uuid":"` + aUUID + `"}`, status: 201,
			want: []string{`"level":1,"parent_level":1,`, `"effective_level":1}`, `"uuid":"` + aUUID + `"`}},
		env.refused("twice", "POST", members, `{"user_uuid":"`+aUUID+`"}`, "", "invalid_input",
			"This user likely already is an explicit member of the project."),
		{name: "the owner adds themselves", method: "POST", path: members, key: env.owner, body: add(ownerUUID, 1), status: 403,
			want: []string{denied("You can't explicitly add yourself to projects.")}},
		{name: "a user of another organization", method: "POST", path: members, key: env.owner, body: add(outsiderUUID, 1), status: 403,
			want: []string{denied("You both need to belong to the same organization.")}},
		{name: "a user who does not exist", method: "POST", path: members, key: env.owner, body: add("00000000-0000-0000-0000-000000000001", 1),
			status: 403, want: []string{denied("You both need to belong to the same organization.")}},
		env.refused("no user_uuid", "POST", members, `{"level":1}`, "user_uuid", "required", "This field is required."),
		env.refused("not a uuid", "POST", members, `{"user_uuid":"x"}`, "user_uuid", "invalid_input", "Must be a valid UUID."),
		env.refused("an organization level", "POST", members, add(bUUID, 15), "level", "invalid_choice", `"15" is not a valid choice.`),
		env.refused("a project that is not private", "POST", open, add(bUUID, 1), "", "invalid_input",
			"Explicit members can only be accessed for projects with project-based permissioning enabled."),
		{name: "an explicit member lists", method: "GET", path: members, key: aKey, status: 200, want: []string{`"uuid":"` + aUUID + `"`}},
		{name: "an explicit member may not add", method: "POST", path: members, key: aKey, body: add(bUUID, 1), status: 403, want: []string{insufficient}},
		{name: "a member not added may not list", method: "GET", path: members, key: bKey, status: 403, want: []string{noProjectAccess}},
		{name: "a user of another organization may not list", method: "GET", path: members, key: outsiderKey, status: 404,
			want: []string{`"detail":"Project not found."`}},
		{name: "a key without project:write", method: "POST", path: members, key: readOnlyKey, body: add(bUUID, 1), status: 403,
			want: []string{`API key missing required scope 'project:write'`}},
		{name: "the owner makes the member an admin of the project", method: "PATCH", path: members + aUUID + "/", key: env.owner,
			body: `{"level":8}`, status: 200, want: []string{`"level":8,"parent_level":1,`, `"effective_level":8}`}},
		{name: "the project admin adds an admin", method: "POST", path: members, key: aKey, body: add(bUUID, 8), status: 201,
			want: []string{`"level":8,`}},
		{name: "the project admin changes another", method: "PATCH", path: members + bUUID + "/", key: aKey, body: `{"level":1}`, status: 200,
			want: []string{`"level":1,`}},
		{name: "the project admin changes their own level", method: "PATCH", path: members + "@me/", key: aKey, body: `{"level":1}`, status: 403,
			want: []string{denied("You can't set your own access level.")}},
		{name: "the project admin adds themselves", method: "POST", path: members, key: aKey, body: add(aUUID, 1), status: 403,
			want: []string{denied("You can't explicitly add yourself to projects.")}},
		{name: "the project admin adds c", method: "POST", path: members, key: aKey, body: add(cUUID, 1), status: 201},
		{name: "an explicit member may not remove another", method: "DELETE", path: members + cUUID + "/", key: bKey, status: 403,
			want: []string{insufficient}},
		{name: "an explicit member may not change another", method: "PATCH", path: members + cUUID + "/", key: bKey, body: `{"level":8}`,
			status: 403, want: []string{insufficient}},
		{name: "retrieve", method: "GET", path: members + cUUID + "/", key: bKey, status: 200, want: []string{`"uuid":"` + cUUID + `"`}},
		{name: "retrieve someone who is not one", method: "GET", path: members + ownerUUID + "/", key: bKey, status: 404,
			want: []string{`"detail":"Not found."`}},
		{name: "an explicit member leaves", method: "DELETE", path: members + "@me/", key: bKey, status: 204},
		{name: "gone", method: "GET", path: members, key: bKey, status: 403, want: []string{noProjectAccess}},
		{name: "the project admin removes another", method: "DELETE", path: members + cUUID + "/", key: aKey, status: 204},
		{name: "and that one is gone", method: "DELETE", path: members + cUUID + "/", key: aKey, status: 404},
		{name: "the project admin leaves by uuid", method: "DELETE", path: members + aUUID + "/", key: aKey, status: 204},
		{name: "no explicit members left", method: "GET", path: members, key: env.owner, status: 200, want: []string{`[]`}},
	})
}

// The order of the list: lowest level first, then the newest first.
func TestExplicitMembersOrder(t *testing.T) {
	env := newTestEnv(t, "")
	_, project, _ := env.privateProject(t, "Private")
	var uuids []string
	for i, level := range []int{explicitAdmin, explicitMember, explicitMember} {
		u, _ := env.member(t, fmt.Sprintf("m%d@example.com", i), levelMember, "*")
		env.addExplicit(t, project, u, level)
		uuids = append(uuids, u)
	}
	_, _, text := env.call(t, "GET", project+"/explicit_members/", env.owner, "")
	at := func(u string) int { return strings.Index(text, `"uuid":"`+u+`"`) }
	if !(at(uuids[2]) < at(uuids[1]) && at(uuids[1]) < at(uuids[0])) {
		t.Fatalf("order: %s", text)
	}
}

// A private project is granted in an invite by those who administer it: the
// organization's admins and owners, and its explicit project admins; an explicit
// project member, or a plain member, may not.
func TestInviteGrantsPrivateProject(t *testing.T) {
	env := newTestEnv(t, "")
	id, project, _ := env.privateProject(t, "Private")
	projectAdminUUID, projectAdminKey := env.member(t, "padmin@example.com", levelMember, "*")
	projectMemberUUID, projectMemberKey := env.member(t, "pmember@example.com", levelMember, "*")
	_, memberKey := env.member(t, "member@example.com", levelMember, "*")
	env.addExplicit(t, project, projectAdminUUID, explicitAdmin)
	env.addExplicit(t, project, projectMemberUUID, explicitMember)
	invite := func(email string) string {
		return fmt.Sprintf(`{"target_email":%q,"level":1,"private_project_access":[{"id":%d,"level":"member"}]}`, email, id)
	}
	refused := `Project does not exist on this organization, or it is private and you do not have access to it.`
	env.run(t, []scenario{
		{name: "an explicit project admin", method: "POST", path: env.orgPath("invites/"), key: projectAdminKey, body: invite("a@example.com"), status: 201},
		{name: "an explicit project member", method: "POST", path: env.orgPath("invites/"), key: projectMemberKey, body: invite("b@example.com"), status: 400,
			want: []string{refused}},
		{name: "a member not added", method: "POST", path: env.orgPath("invites/"), key: memberKey, body: invite("c@example.com"), status: 400,
			want: []string{refused}},
		{name: "the owner", method: "POST", path: env.orgPath("invites/"), key: env.owner, body: invite("d@example.com"), status: 201},
	})
}
