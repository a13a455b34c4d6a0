// Package natsconn opens the NATS connections of the broker bus and of the NATS sinks the same
// way, with the same JetStream publisher, and names the streams they provision.
package natsconn

import (
	"strings"

	"github.com/ThreeDotsLabs/watermill"
	wmjetstream "github.com/ThreeDotsLabs/watermill-nats/v2/pkg/jetstream"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Options are what every connection of ours wants: named "scribehook <name>" for the broker's
// monitoring, reconnecting without end (a broker restart must not need ours), each disconnect
// and reconnect logged to log under the connection's name. opts follow, to add or override.
func Options(name string, log watermill.LoggerAdapter, opts ...nats.Option) []nats.Option {
	fields := watermill.LogFields{"connection": name}
	return append([]nats.Option{
		nats.Name("scribehook " + name),
		nats.MaxReconnects(-1),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Error("nats disconnected", err, fields)
			}
		}),
		nats.ReconnectHandler(func(c *nats.Conn) {
			log.Info("nats reconnected", fields.Add(watermill.LogFields{"server": c.ConnectedUrlRedacted()}))
		}),
	}, opts...)
}

// Connect dials url with Options.
func Connect(url, name string, log watermill.LoggerAdapter, opts ...nats.Option) (*nats.Conn, error) {
	return nats.Connect(url, Options(name, log, opts...)...)
}

// Publisher is Watermill's JetStream publisher on nc, sending each message to the subject that
// is its topic. Watermill sends to the Name of the stream configuration it computes for a
// topic; that name is the subject itself here, and the streams are provisioned by the caller,
// under a StreamName.
func Publisher(nc *nats.Conn, log watermill.LoggerAdapter) (*wmjetstream.Publisher, error) {
	return wmjetstream.NewPublisher(wmjetstream.PublisherConfig{
		Conn:   nc,
		Logger: log,
		ConfigureStream: func(subject string) jetstream.StreamConfig {
			return jetstream.StreamConfig{Name: subject, Subjects: []string{subject}}
		},
	})
}

// StreamName names the stream of a subject: stream names take no '.', '*', '>', white space
// or path separator, so each character but letters, digits, '-' and '_' becomes '_', and '_'
// is trimmed at both ends: scribehook.inbox is stored in scribehook_inbox. fallback names the
// stream of a subject with nothing left.
func StreamName(subject, fallback string) string {
	s := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, subject)
	if s = strings.Trim(s, "_"); s == "" {
		return fallback
	}
	return s
}
