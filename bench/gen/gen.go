// Package gen makes realistic PostHog events for benchmarks and load tests: shaped like
// what posthog-js sends, 20-40 properties and about 700-900
// bytes each, with $identify, $create_alias and $groupidentify events at realistic
// rates and a configurable share of personless events. Output is deterministic for a
// seed, so runs compare.
package gen

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/google/uuid"
)

// Config shapes the generated traffic. Rates are shares of all events.
type Config struct {
	Seed uint64
	// Users is how many distinct people send events (default 10000).
	Users int
	// PersonlessShare is the share of ordinary events from anonymous visitors, sent with
	// $process_person_profile: false as posthog-js does before identify (0: none, 1: all;
	// posthog-js sites see about 0.3).
	PersonlessShare float64
	// IdentifyRate, AliasRate and GroupRate are the shares of $identify,
	// $create_alias and $groupidentify events (defaults 0.02, 0.005, 0.005).
	IdentifyRate, AliasRate, GroupRate float64
}

// Generator makes events. It is not safe for concurrent use; give each goroutine its own.
type Generator struct {
	cfg Config
	rng *rand.Rand
}

// New returns a generator for cfg, zero fields taking their defaults.
func New(cfg Config) *Generator {
	if cfg.Users <= 0 {
		cfg.Users = 10000
	}
	if cfg.IdentifyRate == 0 {
		cfg.IdentifyRate = 0.02
	}
	if cfg.AliasRate == 0 {
		cfg.AliasRate = 0.005
	}
	if cfg.GroupRate == 0 {
		cfg.GroupRate = 0.005
	}
	return &Generator{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))}
}

var (
	pages    = []string{"/", "/pricing", "/docs/getting-started", "/blog/launch-week", "/signup", "/app/dashboard", "/app/settings/billing", "/features/analytics"}
	browsers = []string{"Chrome", "Safari", "Firefox", "Edge", "Mobile Safari", "Chrome iOS"}
	systems  = []string{"Mac OS X", "Windows", "Linux", "iOS", "Android"}
	custom   = []string{"signed up", "clicked cta", "opened settings", "invited teammate", "exported report", "upgraded plan"}
	sources  = []string{"google", "twitter", "newsletter", "hacker-news", ""}
	devices  = []string{"Desktop", "Mobile", "Tablet"}
)

// Event appends one event JSON object (uuid, event, timestamp, properties with
// distinct_id and token) to dst.
func (g *Generator) Event(dst []byte, token string, now time.Time) []byte {
	r := g.rng.Float64()
	user := g.rng.IntN(g.cfg.Users)
	name, extra := "", ""
	personless := false
	switch {
	case r < g.cfg.IdentifyRate:
		name = "$identify"
		extra = fmt.Sprintf(`,"$anon_distinct_id":"anon-%d","$set":{"email":"user%d@example.com","plan":%q}`, user, user, []string{"free", "pro", "team"}[user%3])
	case r < g.cfg.IdentifyRate+g.cfg.AliasRate:
		name = "$create_alias"
		extra = fmt.Sprintf(`,"alias":"alias-%d"`, user)
	case r < g.cfg.IdentifyRate+g.cfg.AliasRate+g.cfg.GroupRate:
		name = "$groupidentify"
		extra = fmt.Sprintf(`,"$group_type":"company","$group_key":"company-%d","$group_set":{"name":"Company %d","employees":%d}`, user%500, user%500, 5+user%2000)
	default:
		personless = g.rng.Float64() < g.cfg.PersonlessShare
		switch p := g.rng.Float64(); {
		case p < 0.55:
			name = "$pageview"
		case p < 0.75:
			name = "$autocapture"
			extra = fmt.Sprintf(`,"$event_type":"click","$el_text":%q,"$elements_chain":"button.btn.btn-primary:nth-child=%d"`, custom[user%len(custom)], 1+user%4)
		case p < 0.85:
			name = "$pageleave"
		default:
			name = custom[g.rng.IntN(len(custom))]
			extra = fmt.Sprintf(`,"plan":%q,"seats":%d`, []string{"free", "pro", "team"}[user%3], 1+user%50)
		}
		if user%7 == 0 {
			extra += fmt.Sprintf(`,"$groups":{"company":"company-%d"}`, user%500)
		}
	}
	distinctID := "user-" + strconv.Itoa(user)
	if personless {
		distinctID = "anon-" + strconv.Itoa(user)
	}
	page := pages[g.rng.IntN(len(pages))]
	source := sources[user%len(sources)]
	id := uuid.Must(uuid.NewV7())
	// A few properties are present on some events only, so that counts vary 20-40.
	optional := ""
	for i, n := 0, g.rng.IntN(5); i < n; i++ {
		optional += fmt.Sprintf(`,"prop_%d":"value-%d"`, i, g.rng.IntN(1000))
	}
	dst = fmt.Appendf(dst, `{"uuid":%q,"event":%q,"timestamp":%q,"properties":{`+
		`"distinct_id":%q,"token":%q,"$lib":"web","$lib_version":"1.449.2",`+
		`"$current_url":"https://example.com%s?utm_source=%s","$host":"example.com","$pathname":%q,`+
		`"$browser":%q,"$browser_version":%d,"$os":%q,"$device_type":%q,`+
		`"$screen_height":%d,"$screen_width":%d,"$viewport_height":%d,"$viewport_width":%d,`+
		`"$referrer":"$direct","$referring_domain":"$direct","utm_source":%q,`+
		`"$session_id":"%s","$window_id":"%s","$device_id":"device-%d","$insert_id":"%08x",`+
		`"$time":%.3f,"$process_person_profile":%t,"$is_identified":%t%s%s}}`,
		id, name, now.UTC().Format(time.RFC3339Nano),
		distinctID, token, page, source, page,
		browsers[user%len(browsers)], 100+user%40, systems[user%len(systems)], devices[user%len(devices)],
		800+user%400, 1200+user%800, 700+user%300, 1100+user%700, source,
		uuid.NewSHA1(uuid.NameSpaceOID, []byte("session"+strconv.Itoa(user/3))), uuid.NewSHA1(uuid.NameSpaceOID, []byte("window"+strconv.Itoa(user))), user, g.rng.Uint32(),
		float64(now.UnixMilli())/1000, !personless, !personless, extra, optional)
	return dst
}

// Batch appends a /batch/ body of n events to dst: {"api_key", "batch", "sent_at"}.
func (g *Generator) Batch(dst []byte, token string, n int, now time.Time) []byte {
	dst = fmt.Appendf(dst, `{"api_key":%q,"sent_at":%q,"batch":[`, token, now.UTC().Format(time.RFC3339Nano))
	for i := range n {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = g.Event(dst, token, now)
	}
	return append(dst, "]}"...)
}

// Single appends a /capture/ body of one event to dst, the token at the top.
func (g *Generator) Single(dst []byte, token string, now time.Time) []byte {
	dst = fmt.Appendf(dst, `{"api_key":%q,`, token)
	event := g.Event(nil, token, now)
	return append(dst, event[1:]...)
}
