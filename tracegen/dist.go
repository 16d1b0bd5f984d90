package tracegen

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

// DistKind names a delay (or size) distribution.
type DistKind uint8

const (
	Const       DistKind = iota // A
	Normal                      // mean A, standard deviation B, truncated at 0
	Exponential                 // mean A
	Uniform                     // between A and B
	LogNormal                   // mean A, standard deviation B of the value itself
)

var distNames = [...]string{Const: "const", Normal: "normal", Exponential: "exp", Uniform: "uniform", LogNormal: "lognormal"}

// Dist is a random distribution of a non-negative quantity: seconds for
// delays, bytes for sizes.
type Dist struct {
	Kind DistKind
	A, B float64
}

// Mean is the distribution's mean (before truncation at zero).
func (d Dist) Mean() float64 {
	switch d.Kind {
	case Uniform:
		return (d.A + d.B) / 2
	}
	return d.A
}

// Sample draws one value, at least 0. scale multiplies the spread (standard
// deviation of normal and lognormal, half-width of uniform) around the mean;
// 1 leaves the distribution as configured.
func (d Dist) Sample(r *rand.Rand, scale float64) float64 {
	var x float64
	switch d.Kind {
	case Const:
		x = d.A
	case Normal:
		x = d.A + r.NormFloat64()*d.B*scale
	case Exponential:
		x = r.ExpFloat64() * d.A
	case Uniform:
		m, h := (d.A+d.B)/2, (d.B-d.A)/2*scale
		x = m - h + r.Float64()*2*h
	case LogNormal:
		s := d.B * scale
		if d.A <= 0 {
			return 0
		}
		// Parameters of the underlying normal from the mean and std of the value.
		v := math.Log(1 + (s*s)/(d.A*d.A))
		x = math.Exp(math.Log(d.A) - v/2 + r.NormFloat64()*math.Sqrt(v))
	}
	if x < 0 || math.IsNaN(x) {
		return 0
	}
	return x
}

func (d Dist) String() string {
	switch d.Kind {
	case Const:
		return strconv.FormatFloat(d.A, 'g', -1, 64)
	case Exponential:
		return fmt.Sprintf("exp(%g)", d.A)
	}
	return fmt.Sprintf("%s(%g,%g)", distNames[d.Kind], d.A, d.B)
}

// parseDist parses "normal(5ms,1ms)", "exp(20ms)", "uniform(1s,3s)",
// "const(2ms)", "lognormal(10ms,5ms)" or a bare value ("5ms"). With
// seconds set, values take time units (ns, us, ms, s, m, h; bare numbers are
// seconds); otherwise they are plain numbers (sizes, counts).
func parseDist(s string, seconds bool) (Dist, error) {
	val := func(v string) (float64, error) {
		if seconds {
			return parseSeconds(v)
		}
		x, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
			return 0, fmt.Errorf("bad number %q", v)
		}
		return x, nil
	}
	name, args, ok := strings.Cut(s, "(")
	if !ok {
		x, err := val(s)
		return Dist{Kind: Const, A: x}, err
	}
	if !strings.HasSuffix(args, ")") {
		return Dist{}, fmt.Errorf("distribution %q lacks its closing parenthesis", s)
	}
	parts := strings.Split(strings.TrimSuffix(args, ")"), ",")
	var xs []float64
	for _, p := range parts {
		x, err := val(strings.TrimSpace(p))
		if err != nil {
			return Dist{}, fmt.Errorf("distribution %q: %v", s, err)
		}
		xs = append(xs, x)
	}
	want := 2
	var d Dist
	switch name {
	case "const":
		d.Kind, want = Const, 1
	case "normal", "gauss", "gaussian":
		d.Kind = Normal
	case "exp", "exponential":
		d.Kind, want = Exponential, 1
	case "uniform":
		d.Kind = Uniform
	case "lognormal":
		d.Kind = LogNormal
	default:
		return Dist{}, fmt.Errorf("unknown distribution %q (want const, normal, exp, uniform or lognormal)", name)
	}
	if len(xs) != want {
		return Dist{}, fmt.Errorf("distribution %s takes %d argument(s), got %d", name, want, len(xs))
	}
	d.A = xs[0]
	if want == 2 {
		d.B = xs[1]
	}
	if d.Kind == Uniform && d.B < d.A {
		return Dist{}, fmt.Errorf("uniform(%g,%g): upper bound below lower bound", d.A, d.B)
	}
	return d, nil
}

// parseSeconds parses a non-negative duration: a number with an optional unit
// (ns, us, µs, ms, s, m, h); a bare number is seconds.
func parseSeconds(s string) (float64, error) {
	x, err := parseSigned(s)
	if err == nil && x < 0 {
		err = fmt.Errorf("negative duration %q", s)
	}
	return x, err
}

// parseSigned is parseSeconds allowing a sign (clock offsets).
func parseSigned(s string) (float64, error) {
	units := []struct {
		suffix string
		mult   float64
	}{{"ns", 1e-9}, {"us", 1e-6}, {"µs", 1e-6}, {"ms", 1e-3}, {"s", 1}, {"m", 60}, {"h", 3600}}
	mult := 1.0
	num := s
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			num, mult = strings.TrimSuffix(s, u.suffix), u.mult
			break
		}
	}
	x, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(x) || math.IsInf(x, 0) || num == "" {
		return 0, fmt.Errorf("bad duration %q", s)
	}
	return x * mult, nil
}
