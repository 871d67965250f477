package admin

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"
	"golang.org/x/crypto/argon2"
	"golang.org/x/sync/semaphore"
)

// Passwords, for signing in to the web console: argon2id hashes in PHC form, kept in
// meta.user_passwords. Personal API keys do not need one.

// argon2Params are argon2id's costs: OWASP's minimum, 19 MiB and two passes, about 50
// ms of one core per hash here.
type argon2Params struct {
	memoryKiB uint32
	passes    uint32
	threads   uint8
}

// passwordCost is what new hashes cost. Tests lower it; a stored hash keeps the costs
// it was made with, which its PHC string says.
var passwordCost = argon2Params{memoryKiB: 19 * 1024, passes: 2, threads: 1}

// maxConcurrentHashes bounds the hashes computed at once: each takes memoryKiB, and
// 100 parallel sign-ins would otherwise hold about 2 GB.
const maxConcurrentHashes = 2

// minPasswordLength and maxPasswordLength bound a new password, in characters. No
// composition rules (NIST SP 800-63B); the upper bound keeps a hash's input small.
const (
	minPasswordLength = 10
	maxPasswordLength = 256
)

// hasher computes password hashes, at most maxConcurrentHashes at once.
type hasher struct {
	slots *semaphore.Weighted
	// took is how long the last hash took to compute, in nanoseconds (0: none yet).
	took atomic.Int64
}

func newHasher() *hasher { return &hasher{slots: semaphore.NewWeighted(maxConcurrentHashes)} }

// hash is the PHC string of password under a new random salt.
func (h *hasher) hash(ctx context.Context, password string) (string, error) {
	salt := make([]byte, 16)
	rand.Read(salt) // never returns an error: crypto/rand panics instead
	sum, err := h.derive(ctx, password, salt, passwordCost)
	if err != nil {
		return "", err
	}
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, passwordCost.memoryKiB, passwordCost.passes,
		passwordCost.threads, b64.EncodeToString(salt), b64.EncodeToString(sum)), nil
}

// verify reports whether password is the one stored as the PHC string stored.
//
// An empty stored (no password, or no such user) verifies nothing and takes no hashing
// slot: it waits as long as the last hash took to compute (computing one when none has
// been since the start), so that an unknown e-mail is answered in about the time of a
// wrong password, while a flood of made-up e-mails from many addresses cannot hold
// the slots that users' sign-ins wait for. (Under load, a wrong password also waits
// for a slot; an unknown e-mail does not.)
func (h *hasher) verify(ctx context.Context, password, stored string) (bool, error) {
	p, salt, want, ok := parsePHC(stored)
	if !ok {
		return false, h.pretend(ctx)
	}
	sum, err := h.derive(ctx, password, salt, p)
	if err != nil {
		return false, err
	}
	return subtle.ConstantTimeCompare(sum, want) == 1, nil
}

// pretend waits as long as a hash takes to compute.
func (h *hasher) pretend(ctx context.Context) error {
	if h.took.Load() == 0 {
		_, err := h.derive(ctx, "", make([]byte, 16), passwordCost)
		return err
	}
	t := time.NewTimer(time.Duration(h.took.Load()))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return errBusyHashing()
	}
}

// hashWait bounds how long a request waits for a hashing slot: a flood of sign-ins
// from many addresses is refused (errBusyHashing) rather than queued without end.
const hashWait = 5 * time.Second

// errBusyHashing is the 503 of a request that found no hashing slot within hashWait.
func errBusyHashing() *Error {
	return &Error{Status: fiber.StatusServiceUnavailable, Type: "server_error", Code: "service_unavailable",
		Detail: "Too many sign-ins at once: try again in a few seconds."}
}

// derive is argon2id of password and salt under p, once a slot is free.
func (h *hasher) derive(ctx context.Context, password string, salt []byte, p argon2Params) ([]byte, error) {
	wait, cancel := context.WithTimeout(ctx, hashWait)
	defer cancel()
	if err := h.slots.Acquire(wait, 1); err != nil {
		return nil, errBusyHashing()
	}
	defer h.slots.Release(1)
	begin := time.Now()
	sum := argon2.IDKey([]byte(password), salt, p.passes, p.memoryKiB, p.threads, 32)
	h.took.Store(max(1, int64(time.Since(begin))))
	return sum, nil
}

// parsePHC reads an argon2id PHC string; ok is false for anything else, costs past
// what hedge would make included (a stored string is hedge's own, but a row edited by
// hand must not make a sign-in take gigabytes).
func parsePHC(s string) (p argon2Params, salt, sum []byte, ok bool) {
	parts := strings.Split(s, "$")
	if len(parts) != 6 || parts[1] != "argon2id" || parts[2] != fmt.Sprintf("v=%d", argon2.Version) {
		return p, nil, nil, false
	}
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &p.memoryKiB, &p.passes, &p.threads); err != nil ||
		p.memoryKiB == 0 || p.memoryKiB > 256*1024 || p.passes == 0 || p.passes > 10 || p.threads == 0 || p.threads > 4 {
		return p, nil, nil, false
	}
	b64 := base64.RawStdEncoding
	salt, err1 := b64.DecodeString(parts[4])
	sum, err2 := b64.DecodeString(parts[5])
	if err1 != nil || err2 != nil || len(salt) == 0 || len(sum) == 0 {
		return p, nil, nil, false
	}
	return p, salt, sum, true
}

// checkNewPassword refuses a password too short, too long, or the user's e-mail, in
// DRF's shape on attr.
func checkNewPassword(attr, password, email string) error {
	switch n := utf8.RuneCountInString(password); {
	case n < minPasswordLength:
		return errValidation(attr, "password_too_short",
			fmt.Sprintf("This password is too short. It must contain at least %d characters.", minPasswordLength))
	case n > maxPasswordLength:
		return errMaxLength(attr, maxPasswordLength)
	case strings.EqualFold(strings.TrimSpace(password), email):
		return errValidation(attr, "password_too_similar", "The password is too similar to the email address.")
	}
	return nil
}

// setPassword stores hash as the password of user, in q.
func setPassword(ctx context.Context, q querier, userID int64, hash string) error {
	if _, err := q.ExecContext(ctx, `INSERT INTO meta.user_passwords (user_id, hash, updated_at) VALUES (?, ?, now())
		ON CONFLICT (user_id) DO UPDATE SET hash = excluded.hash, updated_at = excluded.updated_at`, userID, hash); err != nil {
		return fmt.Errorf("cannot set the password of user %d: %w", userID, err)
	}
	return nil
}

// SetPassword sets the password of the user with the given e-mail, for `hedge passwd`,
// and ends their sessions. A password that the console would refuse is refused.
func SetPassword(ctx context.Context, db *sql.DB, email, password string) error {
	email = strings.ToLower(strings.TrimSpace(email))
	if err := checkNewPassword("password", password, email); err != nil {
		return err
	}
	var userID int64
	err := db.QueryRowContext(ctx, `SELECT id FROM meta.users WHERE email = ? AND is_active`, email).Scan(&userID)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("no active user has the e-mail %s", email)
	}
	if err != nil {
		return fmt.Errorf("cannot look up user %s: %w", email, err)
	}
	hash, err := newHasher().hash(ctx, password)
	if err != nil {
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("cannot begin setting the password of %s: %w", email, err)
	}
	defer tx.Rollback()
	if err := setPassword(ctx, tx, userID, hash); err != nil {
		return err
	}
	if err := endOtherSessions(ctx, tx, userID, ""); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("cannot commit the password of %s: %w", email, err)
	}
	return nil
}
