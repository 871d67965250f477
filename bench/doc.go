// Package bench holds hedge's end-to-end benchmarks: the capture path in process, over
// loopback HTTP, into a real DuckDB file, with realistic events from bench/gen.
//
//	go test -run XXX -bench . ./bench
package bench
