package admin

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"math/big"
	"strings"
)

// randomToken is the base62 text of nbytes random bytes, left-padded with '0' to at
// least width characters: PostHog's generate_random_token, made fixed-width so that
// key lengths are exactly the documented ones (35 bytes give 47-48 characters, 32
// bytes give 43).
func randomToken(nbytes, width int) string {
	b := make([]byte, nbytes)
	rand.Read(b) // never returns an error: crypto/rand panics instead
	text := new(big.Int).SetBytes(b).Text(62)
	if len(text) < width {
		text = strings.Repeat("0", width-len(text)) + text
	}
	return text
}

// hashKey is the only form in which a personal API key is stored.
func hashKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return "sha256$" + hex.EncodeToString(sum[:])
}

// maskKey shows enough of a key to recognise it: its first and last four characters.
func maskKey(key string) string {
	if len(key) < 8 {
		return "..."
	}
	return key[:4] + "..." + key[len(key)-4:]
}
