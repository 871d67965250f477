package admin

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/mail"
	"os"
	"path/filepath"
)

// BootstrapFile is the file, in the data directory, where the first start writes what
// it created.
const BootstrapFile = "bootstrap.json"

// Bootstrap is what the first start creates. It is written to bootstrap.json (mode
// 0600) because the personal API key and the password are stored nowhere else in clear.
type Bootstrap struct {
	OrganizationID string `json:"organization_id"`
	ProjectID      int64  `json:"project_id"`
	ProjectAPIKey  string `json:"project_api_key"`
	PersonalAPIKey string `json:"personal_api_key"`
	UserEmail      string `json:"user_email"`
	// AdminPassword signs UserEmail in to the web console; hedge passwd changes it.
	AdminPassword string `json:"admin_password"`
	AdminURL      string `json:"admin_url"`
	CaptureURL    string `json:"capture_url"`
}

// BootstrapIfEmpty creates the first organization, its owner (b.UserEmail) with a
// random password, a project with its primary dashboard ("My App Dashboard") and a
// personal API key with scope "*" when the database has no organization yet, and writes them with b's URLs to
// <dataDir>/bootstrap.json. On a database that has an organization it creates nothing
// and returns nil.
//
// The file is written as bootstrap.json.tmp before the rows commit and renamed after,
// so a crash in between cannot lose the only copy of the key: the next start finishes
// the rename if the rows committed and discards the file if they did not.
func BootstrapIfEmpty(ctx context.Context, db *sql.DB, dataDir string, b Bootstrap) (*Bootstrap, error) {
	final := filepath.Join(dataDir, BootstrapFile)
	pending := final + ".tmp"
	if err := finishPendingBootstrap(ctx, db, pending, final); err != nil {
		return nil, err
	}
	var organizations int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM meta.organizations`).Scan(&organizations); err != nil {
		return nil, fmt.Errorf("cannot count organizations: %w", err)
	}
	if organizations > 0 {
		return nil, nil
	}
	if _, err := mail.ParseAddress(b.UserEmail); err != nil {
		return nil, fmt.Errorf("cannot bootstrap with admin e-mail %q: %w", b.UserEmail, err)
	}

	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("cannot begin bootstrap: %w", err)
	}
	defer tx.Rollback()
	organizationID, err := insertOrganization(ctx, tx, "Default organization")
	if err != nil {
		return nil, err
	}
	userID, err := insertUser(ctx, tx, b.UserEmail, "")
	if err != nil {
		return nil, err
	}
	if err := insertMembership(ctx, tx, organizationID, userID, levelOwner); err != nil {
		return nil, err
	}
	projectID, token, err := insertProject(ctx, tx, organizationID, "Default project")
	if err != nil {
		return nil, err
	}
	// As PostHog's Organization.objects.bootstrap: the project starts with its
	// primary dashboard.
	if err := addPrimaryDashboard(ctx, tx, projectID, userID); err != nil {
		return nil, err
	}
	key, err := insertPersonalAPIKey(ctx, tx, userID, "bootstrap", []string{"*"})
	if err != nil {
		return nil, err
	}
	password := randomToken(16, 22)
	hash, err := newHasher().hash(ctx, password)
	if err != nil {
		return nil, err
	}
	if err := setPassword(ctx, tx, userID, hash); err != nil {
		return nil, err
	}
	b.AdminPassword = password
	b.OrganizationID = organizationID.String()
	b.ProjectID = projectID
	b.ProjectAPIKey = token
	b.PersonalAPIKey = key

	text, err := json.MarshalIndent(b, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("cannot encode %s: %w", BootstrapFile, err)
	}
	if err := writeFileSynced(pending, append(text, '\n'), 0o600); err != nil {
		return nil, err
	}
	if err := tx.Commit(); err != nil {
		os.Remove(pending)
		return nil, fmt.Errorf("cannot commit bootstrap: %w", err)
	}
	if err := os.Rename(pending, final); err != nil {
		return nil, fmt.Errorf("cannot rename %s: %w", pending, err)
	}
	return &b, nil
}

// finishPendingBootstrap settles a bootstrap.json.tmp left by a crash during bootstrap.
func finishPendingBootstrap(ctx context.Context, db *sql.DB, pending, final string) error {
	text, err := os.ReadFile(pending)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cannot read %s: %w", pending, err)
	}
	var b Bootstrap
	var committed bool
	if json.Unmarshal(text, &b) == nil {
		err := db.QueryRowContext(ctx, `SELECT count(*) > 0 FROM meta.organizations WHERE id::VARCHAR = ?`, b.OrganizationID).Scan(&committed)
		if err != nil {
			return fmt.Errorf("cannot check the organization in %s: %w", pending, err)
		}
	}
	if committed {
		if err := os.Rename(pending, final); err != nil {
			return fmt.Errorf("cannot rename %s: %w", pending, err)
		}
		return nil
	}
	if err := os.Remove(pending); err != nil {
		return fmt.Errorf("cannot remove %s: %w", pending, err)
	}
	return nil
}

func writeFileSynced(path string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return fmt.Errorf("cannot create %s: %w", path, err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	return nil
}
