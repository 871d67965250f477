package main

import (
	"bytes"
	"context"
	"net"
	"strconv"
	"testing"
)

// The abuse comes from loopback addresses other than 127.0.0.1, perSource connections
// each, when hedge is on loopback; from the machine's own address otherwise.
func TestAbuseSources(t *testing.T) {
	f := func(host string, n int, want ...string) {
		t.Helper()
		sources := abuseSources(host, n)
		var got []string
		for _, s := range sources {
			if s == nil {
				got = append(got, "")
			} else {
				got = append(got, s.IP.String())
			}
		}
		if len(got) != len(want) {
			t.Fatalf("%s, %d connections: %q, want %q", host, n, got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%s, %d connections: %q, want %q", host, n, got, want)
			}
		}
	}
	f("127.0.0.1", 1524, "127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5")
	f("127.0.0.1", 500, "127.0.0.2")
	f("127.0.0.1", 0, "127.0.0.2")
	f("10.1.2.3", 1524, "")
	f("::1", 1524, "")
	f("localhost", 1524, "")
}

// A stalled body announces its length and sends exactly the bytes it is told to.
func TestStalledRequest(t *testing.T) {
	req := stalledRequest("127.0.0.1:8001", "phc_x", 10<<20, 65<<10)
	head, body, ok := bytes.Cut(req, []byte("\r\n\r\n"))
	if !ok || !bytes.HasPrefix(head, []byte("POST /batch/ HTTP/1.1\r\n")) ||
		!bytes.Contains(head, []byte("\r\nContent-Length: "+strconv.Itoa(10<<20))) {
		t.Fatalf("head %q", head)
	}
	if len(body) != 65<<10 || !bytes.HasPrefix(body, []byte(`{"api_key":"phc_x","batch":[{"event":`)) {
		t.Fatalf("%d bytes of body, starting %.40q", len(body), body)
	}
}

// awaitClose returns hedge's status before it closed, 0 for a close without an answer.
func TestAwaitClose(t *testing.T) {
	a := &abuser{ctx: context.Background()}
	f := func(answer string, want int) {
		t.Helper()
		client, server := net.Pipe()
		go func() {
			server.Write([]byte(answer))
			server.Close()
		}()
		if got := a.awaitClose(client); got != want {
			t.Fatalf("%q: %d, want %d", answer, got, want)
		}
	}
	f("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", 400)
	f("HTTP/1.1 429", 429)
	f("", 0)
	f("HTTP/1.1", 0)
}
