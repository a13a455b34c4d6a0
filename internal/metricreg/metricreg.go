// Package metricreg declares a part's Prometheus collectors, each in one line, and registers
// them all or none, so that a part whose construction fails leaves the registry as it found it
// (and can be built again on it).
package metricreg

import "github.com/prometheus/client_golang/prometheus"

// Register registers cs on reg in order; when one fails it unregisters those it registered
// before and returns that collector's error.
func Register(reg prometheus.Registerer, cs ...prometheus.Collector) error {
	for i, c := range cs {
		if err := reg.Register(c); err != nil {
			for _, done := range cs[:i] {
				reg.Unregister(done)
			}
			return err
		}
	}
	return nil
}
