package convolution

import (
	"math/cmplx"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/dsp/fourier"
)

// TestRealFFTAgreesWithGonum checks our transform against gonum's
// dsp/fourier (the FFT the issue names, which step 3 used before
// convolution/fft.go replaced it for speed): forward coefficients and the
// unnormalised inverse agree to rounding at the lengths step 3 uses.
func TestRealFFTAgreesWithGonum(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, n := range []int{2, 8, 64, 512, 4096, 16384, 65536} {
		x := make([]float64, n)
		for i := range x {
			if r.IntN(4) == 0 { // sparse 0/√k indicator-like signals, as step 2 makes
				x[i] = float64(1 + r.IntN(3))
			}
		}
		ours := newRealFFT(n)
		g := fourier.NewFFT(n)
		got := ours.Coefficients(make([]complex128, n/2+1), x)
		want := g.Coefficients(nil, x)
		for k := range want {
			if d := cmplx.Abs(got[k] - want[k]); d > 1e-9*float64(n) {
				t.Fatalf("n %d: X[%d] = %v, gonum %v", n, k, got[k], want[k])
			}
		}
		back := ours.Sequence(make([]float64, n), got)
		gback := g.Sequence(nil, want)
		for j := range gback {
			if d := back[j] - gback[j]; d > 1e-9*float64(n) || d < -1e-9*float64(n) {
				t.Fatalf("n %d: inverse[%d] = %v, gonum %v", n, j, back[j], gback[j])
			}
		}
	}
}
