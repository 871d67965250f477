package admin

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
	"github.com/miekg/dns"
)

// receivedMail is a message the test SMTP server accepted.
type receivedMail struct {
	from string
	to   []string
	data string
}

// startSMTP runs a real SMTP server (go-smtp) on loopback and returns its smtp:// URL
// and the messages it receives.
func startSMTP(t *testing.T) (string, <-chan receivedMail) {
	t.Helper()
	box := make(chan receivedMail, 100)
	server := smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) {
		return &smtpSession{box: box}, nil
	}))
	server.Domain = "localhost"
	server.ReadTimeout, server.WriteTimeout = 10*time.Second, 10*time.Second
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go server.Serve(ln)
	t.Cleanup(func() { server.Close() })
	return "smtp://" + ln.Addr().String() + "?from=hedge@example.com", box
}

type smtpSession struct {
	box  chan<- receivedMail
	mail receivedMail
}

func (s *smtpSession) Reset()        { s.mail = receivedMail{} }
func (s *smtpSession) Logout() error { return nil }
func (s *smtpSession) Mail(from string, _ *smtp.MailOptions) error {
	s.mail.from = from
	return nil
}
func (s *smtpSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.mail.to = append(s.mail.to, to)
	return nil
}
func (s *smtpSession) Data(r io.Reader) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.mail.data = string(data)
	s.box <- s.mail
	return nil
}

// dnsZone is what the test DNS server answers: TXT records by name.
type dnsZone struct {
	mu  sync.Mutex
	txt map[string][]string
}

func (z *dnsZone) set(name string, values ...string) {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.txt[dns.Fqdn(name)] = values
}

// startDNS runs a real DNS server (miekg/dns) on loopback, UDP and TCP on one port,
// and returns its address and zone; names not in the zone are NXDOMAIN.
func startDNS(t *testing.T) (string, *dnsZone) {
	t.Helper()
	zone := &dnsZone{txt: map[string][]string{}}
	handler := dns.HandlerFunc(func(w dns.ResponseWriter, req *dns.Msg) {
		reply := new(dns.Msg)
		reply.SetReply(req)
		zone.mu.Lock()
		defer zone.mu.Unlock()
		for _, q := range req.Question {
			values, ok := zone.txt[q.Name]
			if !ok {
				reply.Rcode = dns.RcodeNameError
				continue
			}
			if q.Qtype == dns.TypeTXT {
				for _, v := range values {
					reply.Answer = append(reply.Answer, &dns.TXT{
						Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeTXT, Class: dns.ClassINET, Ttl: 60}, Txt: []string{v}})
				}
			}
		}
		w.WriteMsg(reply)
	})
	// The resolver tries TCP on the UDP server's port (for truncated answers), so both
	// need one port: a free UDP port may be taken for TCP by another test process, so
	// try a few.
	var udp net.PacketConn
	var tcp net.Listener
	for attempt := 0; ; attempt++ {
		var err error
		if udp, err = net.ListenPacket("udp", "127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
		if tcp, err = net.Listen("tcp", udp.LocalAddr().String()); err == nil {
			break
		}
		udp.Close()
		if attempt == 20 {
			t.Fatal(err)
		}
	}
	servers := []*dns.Server{{PacketConn: udp, Handler: handler}, {Listener: tcp, Handler: handler}}
	for _, s := range servers {
		started := make(chan struct{})
		s.NotifyStartedFunc = func() { close(started) }
		go s.ActivateAndServe()
		<-started
	}
	t.Cleanup(func() {
		for _, s := range servers {
			s.Shutdown()
		}
	})
	return udp.LocalAddr().String(), zone
}

// mustText is v as JSON, for looking for fragments in decoded answers.
func mustText(t *testing.T, v any) string {
	t.Helper()
	text, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(text)
}

// inOrder fails unless the fragments appear in text in this order.
func inOrder(t *testing.T, text string, fragments ...string) {
	t.Helper()
	at := 0
	for _, f := range fragments {
		i := strings.Index(text[at:], f)
		if i < 0 {
			t.Fatalf("%q missing or out of order in %s", f, text)
		}
		at += i + len(f)
	}
}

// hedge has no rate limit on the management API: a key makes thousands of calls a
// minute, as scripts and dashboards do (PostHog limits personal keys only when its
// rate limiting is on).
func TestNoRateLimit(t *testing.T) {
	env := serveAPI(t, nil)
	const calls, workers = 2000, 8
	statuses := make(chan int, calls)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range calls / workers {
				req, _ := http.NewRequest("GET", env.url+"/api/users/@me/", nil)
				req.Header.Set("Authorization", "Bearer "+env.owner)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					statuses <- 0
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				statuses <- resp.StatusCode
			}
		})
	}
	wg.Wait()
	close(statuses)
	counts := map[int]int{}
	for s := range statuses {
		counts[s]++
	}
	if counts[200] != calls {
		t.Fatalf("%d calls with one key answered %v, want all 200", calls, counts)
	}
}
