package admin

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"
)

// TestInstanceStatus: the instance status says how events reach the warehouse, and
// with the event log on, each partition's backlog, totalled in the overview; and where
// they are kept (the lake's side: TestConsoleIngestion).
func TestInstanceStatus(t *testing.T) {
	type answer struct {
		Results struct {
			Overview []instanceStatusItem `json:"overview"`
			EventLog *eventLogRecord      `json:"event_log"`
			Storage  *storageRecord       `json:"storage"`
		} `json:"results"`
	}
	read := func(env *testEnv) (answer, map[string]any) {
		t.Helper()
		_, text, _ := env.do(t, http.MethodGet, "/api/instance_status/", env.boot.PersonalAPIKey, nil, "")
		var a answer
		if err := json.Unmarshal([]byte(text), &a); err != nil {
			t.Fatalf("%v: %s", err, text)
		}
		values := map[string]any{}
		for _, item := range a.Results.Overview {
			values[item.Key] = item.Value
		}
		return a, values
	}

	direct := serveAPI(t, func(cfg *Config) { cfg.Version = "v1.2.3" })
	a, values := read(direct)
	if values["event_path"] != "direct" || values["hedge_version"] != "v1.2.3" || a.Results.EventLog != nil ||
		a.Results.Storage == nil || *a.Results.Storage != (storageRecord{Kind: "table"}) {
		t.Errorf("direct: overview %v, event_log %+v, storage %+v", values, a.Results.EventLog, a.Results.Storage)
	}
	if status, _, _ := direct.do(t, http.MethodGet, "/api/instance_status/", "", nil, ""); status != http.StatusUnauthorized {
		t.Errorf("without a key: %d, want 401", status)
	}

	viaLog := serveAPI(t, func(cfg *Config) {
		cfg.EventLog = func() *EventLogStatus {
			return &EventLogStatus{Mode: "cluster", Replicas: 3, DeadLetters: 2, Partitions: []PartitionBacklog{
				{Partition: 0, Messages: 0}, {Partition: 1, Messages: 7, Behind: 1500 * time.Millisecond}, {Partition: 2, Messages: 3, Behind: 4 * time.Second},
			}}
		}
	})
	a, values = read(viaLog)
	if values["event_path"] != "cluster" || values["log_backlog_messages"] != 10.0 || values["log_behind_seconds"] != 4.0 || values["log_dead_letters"] != 2.0 {
		t.Errorf("cluster: overview %v", values)
	}
	l := a.Results.EventLog
	if l == nil || l.Mode != "cluster" || l.Replicas != 3 || len(l.Partitions) != 3 || l.Partitions[1] != (partitionRecord{Partition: 1, BacklogMessages: 7, BehindSeconds: 1.5}) {
		t.Errorf("cluster: event_log %+v", l)
	}
}
