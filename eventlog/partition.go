package eventlog

// Partition is the partition of (team, distinctID) among n: FNV-1a of the team's
// eight bytes and the id, so that every node and every version puts a person's
// events in the same partition (a seeded hash would differ between processes).
func Partition(team int64, distinctID string, n int) int {
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	for i := range 8 {
		h ^= uint64(byte(team >> (8 * i)))
		h *= prime
	}
	for i := 0; i < len(distinctID); i++ {
		h ^= uint64(distinctID[i])
		h *= prime
	}
	return int(h % uint64(n))
}
