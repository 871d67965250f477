package flags

import (
	"crypto/sha1"
	"encoding/binary"
)

// hashScale is the largest value of the 60 bits of a hash: a hash divided by it is a
// number from 0 to 1.
const hashScale = 0xFFFFFFFFFFFFFFF

// hash places the identifier id on [0, 1]: the first 15 hexadecimal digits (60 bits)
// of the SHA-1 of prefix+id+salt, divided by hashScale. A flag's prefix is its key and
// a dot; its rollout hashes with the salt "", its variant with "variant"; a holdout's
// prefix is "holdout-" with no key. The same inputs give the same number in every
// PostHog implementation.
func hash(prefix, id, salt string) float64 {
	var buf [192]byte
	b := append(append(append(buf[:0], prefix...), id...), salt...)
	sum := sha1.Sum(b)
	return float64(binary.BigEndian.Uint64(sum[:8])>>4) / float64(hashScale)
}

// flagHash is hash for a flag's identifier; an empty identifier is 0, which passes
// every rollout that is not negative.
func flagHash(prefix, id, salt string) float64 {
	if id == "" {
		return 0
	}
	return hash(prefix, id, salt)
}
