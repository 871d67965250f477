package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// clockTicks is the unit of the CPU times in /proc (USER_HZ), 100 on every Linux
// architecture Go supports.
const clockTicks = 100

// systemCPU is the machine's CPU time from the first line of /proc/stat, in seconds.
type systemCPU struct {
	total, idle, steal float64
}

func readSystemCPU() (systemCPU, error) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return systemCPU{}, fmt.Errorf("cannot read the machine's CPU times: %w", err)
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadString('\n')
	fields := strings.Fields(line)
	if err != nil || len(fields) < 9 || fields[0] != "cpu" {
		return systemCPU{}, fmt.Errorf("cannot read the machine's CPU times: unexpected /proc/stat line %q", line)
	}
	// user nice system idle iowait irq softirq steal; guest time is inside user.
	var t [8]float64
	for i := range t {
		n, err := strconv.ParseFloat(fields[1+i], 64)
		if err != nil {
			return systemCPU{}, fmt.Errorf("cannot read the machine's CPU times: %w", err)
		}
		t[i] = n / clockTicks
	}
	c := systemCPU{idle: t[3] + t[4], steal: t[7]}
	for _, v := range t {
		c.total += v
	}
	return c, nil
}

// processCPU is the user and system CPU time of a process ("self" or a pid), in seconds.
func processCPU(pid string) (float64, error) {
	text, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0, fmt.Errorf("cannot read the CPU time of process %s: %w", pid, err)
	}
	// The command name, in parentheses, may hold spaces: fields count from after it.
	fields := strings.Fields(string(text[bytes.LastIndexByte(text, ')')+1:]))
	if len(fields) < 13 {
		return 0, fmt.Errorf("cannot read the CPU time of process %s: short /proc stat", pid)
	}
	utime, err1 := strconv.ParseFloat(fields[11], 64)
	stime, err2 := strconv.ParseFloat(fields[12], 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("cannot read the CPU time of process %s: %q %q", pid, fields[11], fields[12])
	}
	return (utime + stime) / clockTicks, nil
}

// processMemory is a process's resident set and its peak (VmRSS, VmHWM), in bytes.
func processMemory(pid string) (rss, peak int64, err error) {
	text, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return 0, 0, fmt.Errorf("cannot read the memory of process %s: %w", pid, err)
	}
	for line := range strings.Lines(string(text)) {
		key, value, _ := strings.Cut(line, ":")
		if key != "VmRSS" && key != "VmHWM" {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("cannot read the memory of process %s: %s", pid, line)
		}
		if key == "VmRSS" {
			rss = kb << 10
		} else {
			peak = kb << 10
		}
	}
	return rss, peak, nil
}

// resetPeakMemory starts a process's VmHWM afresh from its current resident set, so
// that each scenario reports its own peak (Linux 4.0+, by the process's owner).
func resetPeakMemory(pid string) error {
	if err := os.WriteFile("/proc/"+pid+"/clear_refs", []byte("5"), 0); err != nil {
		return fmt.Errorf("cannot reset the peak memory of process %s: %w", pid, err)
	}
	return nil
}

// rssSample is the server's resident set at one moment of a run.
type rssSample struct {
	At    time.Duration `json:"at_ms"` // since the run started
	Bytes int64         `json:"bytes"`
}

// usage is what a run cost the machine.
type usage struct {
	// ServerCPU, ClientCPU (this generator) and OtherCPU (every other process) are in
	// cores: CPU seconds per second of the run. ServerCPU is -1 when unknown.
	ServerCPU, ClientCPU, OtherCPU float64
	// StealPercent is the share of the machine's CPU time the hypervisor took.
	StealPercent float64
	// PeakRSS is the server's peak resident set, 0 when unknown; a cluster's is its
	// nodes' peaks added up, each in NodePeakRSS by the node's name.
	PeakRSS     int64
	NodePeakRSS map[string]int64
	Series      []rssSample
	// Source says where the server's figures come from: "/proc/<pid>", "<admin>/metrics" or "".
	Source string
}

// serverProbe reads the server's CPU time and resident set: from /proc when its pid is
// known, else from the process_* counters of hedge's /metrics.
type serverProbe interface {
	read() (cpu float64, rss int64, err error)
	source() string
}

// procProbe reads the server's processes: one hedge, or a cluster's nodes, whose CPU
// times and resident sets it adds up.
type procProbe struct {
	pids []string
	// nodes names each pid's node, for a cluster; nil for one hedge.
	nodes []string
}

func (p procProbe) read() (cpu float64, rss int64, err error) {
	for _, pid := range p.pids {
		c, err := processCPU(pid)
		if err != nil {
			return 0, 0, err
		}
		r, _, err := processMemory(pid)
		if err != nil {
			return 0, 0, err
		}
		cpu, rss = cpu+c, rss+r
	}
	return cpu, rss, nil
}

func (p procProbe) source() string { return "/proc/" + strings.Join(p.pids, ",") }

// peaks is each process's peak resident set since its last resetPeakMemory.
func (p procProbe) peaks() ([]int64, error) {
	peaks := make([]int64, len(p.pids))
	for i, pid := range p.pids {
		_, peak, err := processMemory(pid)
		if err != nil {
			return nil, err
		}
		peaks[i] = peak
	}
	return peaks, nil
}

type metricsProbe struct{ api *apiClient }

func (p metricsProbe) read() (float64, int64, error) {
	m, err := p.api.metrics("process_cpu_seconds_total", "process_resident_memory_bytes")
	return m["process_cpu_seconds_total"], int64(m["process_resident_memory_bytes"]), err
}

func (p metricsProbe) source() string { return p.api.adminURL + "/metrics" }

// watch follows a run: CPU times at its ends, and the server's resident set sampled
// every interval in between.
type watch struct {
	probe     serverProbe // nil: the server is not observable
	start     time.Time
	sys0      systemCPU
	self0     float64
	server0   float64
	serverErr error

	mu     sync.Mutex
	series []rssSample
	stop   chan struct{}
	done   chan struct{}
}

const rssInterval = 250 * time.Millisecond

func startWatch(probe serverProbe) (*watch, error) {
	w := &watch{probe: probe, start: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	var err error
	if w.sys0, err = readSystemCPU(); err != nil {
		return nil, err
	}
	if w.self0, err = processCPU("self"); err != nil {
		return nil, err
	}
	if p, ok := probe.(procProbe); ok {
		for _, pid := range p.pids {
			if err := resetPeakMemory(pid); err != nil {
				return nil, err
			}
		}
	}
	if probe != nil {
		w.server0, _, w.serverErr = probe.read()
	}
	go w.sample()
	return w, nil
}

func (w *watch) sample() {
	defer close(w.done)
	tick := time.NewTicker(rssInterval)
	defer tick.Stop()
	for {
		if w.probe != nil {
			if _, rss, err := w.probe.read(); err == nil {
				w.mu.Lock()
				w.series = append(w.series, rssSample{At: time.Since(w.start), Bytes: rss})
				w.mu.Unlock()
			}
		}
		select {
		case <-w.stop:
			return
		case <-tick.C:
		}
	}
}

// end stops the sampling and returns what the run cost.
func (w *watch) end() (usage, error) {
	close(w.stop)
	<-w.done
	elapsed := time.Since(w.start).Seconds()
	sys1, err := readSystemCPU()
	if err != nil {
		return usage{}, err
	}
	self1, err := processCPU("self")
	if err != nil {
		return usage{}, err
	}
	u := usage{ServerCPU: -1, ClientCPU: (self1 - w.self0) / elapsed, Series: w.series}
	total := sys1.total - w.sys0.total
	busy := total - (sys1.idle - w.sys0.idle)
	if total > 0 {
		u.StealPercent = 100 * (sys1.steal - w.sys0.steal) / total
	}
	// The steal is counted in busy time: it is CPU the machine did not get, not work.
	busyCores := (busy - (sys1.steal - w.sys0.steal)) / elapsed
	u.OtherCPU = busyCores - u.ClientCPU
	if w.probe != nil && w.serverErr == nil {
		u.Source = w.probe.source()
		server1, _, err := w.probe.read()
		if err != nil {
			return usage{}, err
		}
		u.ServerCPU = (server1 - w.server0) / elapsed
		u.OtherCPU -= u.ServerCPU
		for _, s := range w.series {
			u.PeakRSS = max(u.PeakRSS, s.Bytes)
		}
		if p, ok := w.probe.(procProbe); ok {
			// The kernel's peak catches what 250 ms samples miss. A cluster's nodes' peaks
			// add up to what they need on machines of their own, at least the peak of
			// their sum at one moment, which the samples see.
			if peaks, err := p.peaks(); err == nil {
				var sum int64
				for _, peak := range peaks {
					sum += peak
				}
				u.PeakRSS = max(u.PeakRSS, sum)
				if p.nodes != nil {
					u.NodePeakRSS = map[string]int64{}
					for i, name := range p.nodes {
						u.NodePeakRSS[name] = peaks[i]
					}
				}
			}
		}
	}
	u.OtherCPU = max(u.OtherCPU, 0)
	return u, nil
}

// machine describes the computer a report was measured on.
type machine struct {
	CPUModel    string     `json:"cpu_model"`
	Cores       int        `json:"cores"`
	MemoryBytes int64      `json:"memory_bytes"`
	Kernel      string     `json:"kernel"`
	GoVersion   string     `json:"go_version"`
	LoadAverage [3]float64 `json:"load_average_at_start"`
	// StealPercent is the hypervisor's share of the CPU over the whole report.
	StealPercent float64 `json:"steal_percent"`
}

func describeMachine() machine {
	m := machine{Cores: runtime.NumCPU(), GoVersion: runtime.Version()}
	if text, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.Lines(string(text)) {
			if key, value, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(key) == "model name" {
				m.CPUModel = strings.TrimSpace(value)
				break
			}
		}
	}
	if text, err := os.ReadFile("/proc/meminfo"); err == nil {
		for line := range strings.Lines(string(text)) {
			if value, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
				m.MemoryBytes = kb << 10
			}
		}
	}
	if text, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(text))
	}
	if text, err := os.ReadFile("/proc/loadavg"); err == nil {
		fmt.Sscan(string(text), &m.LoadAverage[0], &m.LoadAverage[1], &m.LoadAverage[2])
	}
	return m
}
