package sinks

import "github.com/scribehook/scribehook/internal/netguard"

// Outbound webhook URLs come from configuration and point wherever their author likes; the
// guard, shared with the sandbox's audio fetches, keeps them off the machine itself, the private
// network and the cloud's metadata service (docs/design.md, rule 5).

// Guard decides which addresses a webhook sink may connect to.
type Guard = netguard.Guard

// BlockedAddressError says that a webhook target is in a range the guard refuses.
type BlockedAddressError = netguard.BlockedAddressError

// NewGuard builds a guard with an allow-list of CIDR ranges ("10.1.2.0/24"), addresses
// ("10.1.2.3") and host names ("hooks.internal", trusted whatever they resolve to).
func NewGuard(allow []string) (*Guard, error) { return netguard.New(allow) }
