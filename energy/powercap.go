package energy

import "context"

// DefaultPowercapRoot is where Linux exposes powercap zones.
const DefaultPowercapRoot = "/sys/class/powercap"

// Powercap is a Source of CPU energy from Linux powercap (Intel RAPL, and
// AMD's RAPL through the same driver). It reads the zones
// Root/intel-rapl:N (package domains, named "package-N") and
// Root/intel-rapl:N:M (their subdomains: "dram", "core", "uncore"):
// energy_uj, a cumulative counter in µJ, reported as MetricEnergy in
// joules for node "package-N" or "package-N/dram"; max_energy_range_uj,
// where it wraps, through CounterMax.
//
// By default only package and dram domains are read: they are disjoint, so
// their sum is the CPU sockets' energy, whereas core and uncore are parts
// of the package and psys covers the package too (adding them would count
// energy twice).
//
// On kernels patched for CVE-2020-8694 energy_uj is readable by root
// only; Read then fails with an error wrapping ErrUnavailable. On systems
// other than Linux every Read fails with ErrUnavailable. Zones are found
// afresh on each Read (a glob and a few small files); a Powercap holds no
// state and is safe for concurrent use.
type Powercap struct {
	// Root is the powercap directory (default DefaultPowercapRoot);
	// tests point it at a fake tree.
	Root string
	// Domains names the domains to read; "package" stands for every
	// "package-N" (default: "package" and "dram").
	Domains []string
}

var (
	_ Source  = Powercap{}
	_ Counter = Powercap{}
)

// Read returns the energy counter of every selected zone.
func (p Powercap) Read(ctx context.Context) ([]Reading, error) { return p.read(ctx) }

// CounterMax returns the wraparound of node's counter in joules:
// max_energy_range_uj / 10⁶. (The counter wraps from that value to zero;
// the 1 µJ between max and max+1 is below any resolution that matters.)
func (p Powercap) CounterMax(ctx context.Context, node string) (float64, error) {
	return p.counterMax(ctx, node)
}

func (p Powercap) root() string {
	if p.Root == "" {
		return DefaultPowercapRoot
	}
	return p.Root
}

func (p Powercap) wants(name string) bool {
	domains := p.Domains
	if domains == nil {
		domains = []string{"package", "dram"}
	}
	for _, d := range domains {
		if name == d || d == "package" && len(name) > len("package-") && name[:len("package-")] == "package-" {
			return true
		}
	}
	return false
}
