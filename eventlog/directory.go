package eventlog

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"

	"github.com/nats-io/nats.go/jetstream"
)

// The directory is a key-value bucket of the log (replicated as its streams are)
// where the warehouse node tells the edge-only nodes of a cluster what their edges
// need of it: which project each API token names, so that they accept and refuse
// events as the warehouse node's edge does, and where its capture listener is, which
// answers the routes they do not (flags, remote config, the SDKs' management routes).
// It survives the warehouse node: while that node is down the others' edges go on
// accepting events for the projects it last told of.
const (
	directoryBucket = "HEDGE_DIRECTORY"
	// tokenKeyPrefix starts a token's key; the token follows in unpadded base64url,
	// as a key holds only letters, digits and -/_=.
	tokenKeyPrefix = "token."
	// warehouseKey holds the warehouse node's capture URL.
	warehouseKey = "warehouse.capture_url"
	// directoryMaxBytes bounds the directory: some 300,000 projects' tokens.
	directoryMaxBytes = 64 << 20
)

// ShareTokens writes the project tokens whose project the directory does not hold
// yet, or holds otherwise (a warehouse node calls it at start and after each change
// of a token).
func (n *Node) ShareTokens(ctx context.Context, tokens map[string]int64) error {
	n.sharedMu.Lock()
	defer n.sharedMu.Unlock()
	if n.shared == nil {
		// What the directory holds from earlier starts, read in one pass, so that a
		// start writes (and fsyncs on a quorum) only the tokens that changed.
		d, err := n.WatchDirectory(ctx)
		if err != nil {
			return err
		}
		d.mu.RLock()
		n.shared = maps.Clone(d.teams)
		d.mu.RUnlock()
		d.stop()
	}
	for token, team := range tokens {
		if shared, ok := n.shared[token]; ok && shared == team {
			continue
		}
		if _, err := n.directory.PutString(ctx, tokenKey(token), strconv.FormatInt(team, 10)); err != nil {
			return fmt.Errorf("cannot share a project's token with the cluster: %w", err)
		}
		n.shared[token] = team
	}
	return nil
}

// ShareWarehouse writes where the warehouse node's capture listener is.
func (n *Node) ShareWarehouse(ctx context.Context, captureURL string) error {
	if _, err := n.directory.PutString(ctx, warehouseKey, captureURL); err != nil {
		return fmt.Errorf("cannot tell the cluster where the warehouse is: %w", err)
	}
	return nil
}

func tokenKey(token string) string {
	return tokenKeyPrefix + base64.RawURLEncoding.EncodeToString([]byte(token))
}

// Directory is an edge-only node's copy of the directory, kept current by a watch of
// the bucket from WatchDirectory until the node closes.
type Directory struct {
	mu        sync.RWMutex
	teams     map[string]int64
	warehouse string
	watch     jetstream.KeyWatcher
}

// stop ends the watch; the Directory keeps what it read.
func (d *Directory) stop() { d.watch.Stop() }

// WatchDirectory reads the directory and returns once it holds all of it; the watch
// goes on updating it until the node closes.
func (n *Node) WatchDirectory(ctx context.Context) (*Directory, error) {
	w, err := n.directory.WatchAll(ctx)
	if err != nil {
		return nil, fmt.Errorf("cannot read the log's directory: %w", err)
	}
	d := &Directory{teams: make(map[string]int64), watch: w}
	for {
		select {
		case e, ok := <-w.Updates():
			if !ok {
				return nil, errors.New("cannot read the log's directory: the watch ended")
			}
			if e == nil { // the initial values are in
				go d.follow(w)
				return d, nil
			}
			d.apply(e)
		case <-ctx.Done():
			w.Stop()
			return nil, fmt.Errorf("cannot read the log's directory: %w", ctx.Err())
		}
	}
}

// follow applies the watch's updates until it ends (the node's connection closes).
func (d *Directory) follow(w jetstream.KeyWatcher) {
	for e := range w.Updates() {
		if e != nil {
			d.apply(e)
		}
	}
}

func (d *Directory) apply(e jetstream.KeyValueEntry) {
	d.mu.Lock()
	defer d.mu.Unlock()
	key := e.Key()
	if key == warehouseKey {
		d.warehouse = string(e.Value())
		return
	}
	encoded, ok := strings.CutPrefix(key, tokenKeyPrefix)
	if !ok {
		return
	}
	token, err := base64.RawURLEncoding.DecodeString(encoded)
	if err != nil {
		return
	}
	if e.Operation() != jetstream.KeyValuePut {
		delete(d.teams, string(token))
		return
	}
	if team, err := strconv.ParseInt(string(e.Value()), 10, 64); err == nil {
		d.teams[string(token)] = team
	}
}

// Team returns the id of the project whose API token is token.
func (d *Directory) Team(token string) (int64, bool) {
	d.mu.RLock()
	team, ok := d.teams[token]
	d.mu.RUnlock()
	return team, ok
}

// Warehouse is the warehouse node's capture URL, "" until it has said.
func (d *Directory) Warehouse() string {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.warehouse
}
