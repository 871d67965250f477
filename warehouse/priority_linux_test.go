package warehouse

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// niceOf is the nice value of thread tid of this process.
func niceOf(t *testing.T, tid int) int {
	t.Helper()
	stat, err := os.ReadFile("/proc/self/task/" + strconv.Itoa(tid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	// The fields after the command's closing parenthesis: nice is the 19th field of the
	// line, the 17th after it.
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	nice, err := strconv.Atoi(fields[16])
	if err != nil {
		t.Fatal(err)
	}
	return nice
}

// onLoweredThread runs its function on a thread of nice DefaultQueryNice, leaves the caller's
// thread as it was, and hands back the function's values and panics.
func TestOnLoweredThread(t *testing.T) {
	base := niceOf(t, unix.Gettid())
	if base >= DefaultQueryNice {
		t.Skipf("the test runs at nice %d already", base)
	}
	tid, err := onLoweredThread(DefaultQueryNice, func() (int, error) { return unix.Gettid(), errors.New("the function's error") })
	if err == nil || err.Error() != "the function's error" {
		t.Fatalf("error %v", err)
	}
	if tid == unix.Gettid() {
		t.Fatal("the function ran on the caller's thread")
	}
	nice, _ := onLoweredThread(DefaultQueryNice, func() (int, error) { return niceOf(t, unix.Gettid()), nil })
	if nice != DefaultQueryNice {
		t.Fatalf("the function ran at nice %d, want %d", nice, DefaultQueryNice)
	}
	if mine := niceOf(t, unix.Gettid()); mine != base {
		t.Fatalf("the caller's thread is at nice %d", mine)
	}
	defer func() {
		if r := recover(); r != "the function's panic" {
			t.Fatalf("recovered %v", r)
		}
	}()
	onLoweredThread(DefaultQueryNice, func() (int, error) { panic("the function's panic") })
}

// DuckDB's worker threads, which run the parallel parts of users' queries, have the
// lowered priority; the threads of the Go runtime, which run the writer, do not.
func TestDuckDBWorkersLowered(t *testing.T) {
	base := niceOf(t, unix.Gettid())
	if base >= DefaultQueryNice {
		t.Skipf("the test runs at nice %d already", base)
	}
	// count is how many threads of the process are at nice and at base.
	count := func() (lowered, normal int) {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			t.Skipf("no /proc: %v", err)
		}
		for _, task := range tasks {
			tid, _ := strconv.Atoi(task.Name())
			switch niceOf(t, tid) {
			case DefaultQueryNice:
				lowered++
			case base:
				normal++
			}
		}
		return lowered, normal
	}
	before, _ := count()
	w := openTestWarehouse(t, filepath.Join(t.TempDir(), "hedge.duckdb"), Config{Threads: 4, Query: QueryLimits{Nice: DefaultQueryNice}})
	defer w.Close()
	after, normal := count()
	// Four threads: three workers besides the thread that calls; Open may have started
	// one lowered thread of its own to open the database from.
	if after-before < 3 || normal == 0 {
		t.Fatalf("%d more threads at nice %d (%d at %d): want DuckDB's 3 workers lowered", after-before, DefaultQueryNice, normal, base)
	}
}

// tryAlongside starts its function on a thread of the pool at the pool's nice while the
// pool has a thread idle or room for one, and else answers false at once, never
// waiting; a thread that is done takes the next function.
func TestTryAlongside(t *testing.T) {
	const nice = 17 // a pool of its own
	if base := niceOf(t, unix.Gettid()); base >= nice {
		t.Skipf("the test runs at nice %d already", base)
	}
	release := make(chan struct{})
	started := make(chan int)
	for i := range loweredThreadsPerPool {
		if !tryAlongside(nice, func() { started <- niceOf(t, unix.Gettid()); <-release }) {
			t.Fatalf("function %d not started with the pool not full", i)
		}
		if got := <-started; got != nice {
			t.Fatalf("function %d ran at nice %d", i, got)
		}
	}
	if tryAlongside(nice, func() { t.Error("a function ran with every thread busy") }) {
		t.Fatal("started with every thread busy")
	}
	close(release)
	ran := make(chan struct{})
	for !tryAlongside(nice, func() { close(ran) }) {
		runtime.Gosched() // until a released thread is idle
	}
	<-ran
}
