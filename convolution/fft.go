package convolution

import (
	"math"
	"math/bits"
)

// realFFT is the discrete Fourier transform of real signals of a
// power-of-two length n, taken as a complex transform of length n/2
// (even samples as real parts, odd as imaginary) and one pass that
// separates the two (the usual "two real FFTs for one" split). Iterative
// radix-2 with per-stage twiddle tables, two stages per pass over the
// data: three to four times as fast here as gonum's FFTPACK port at
// n = 16384 (BenchmarkFFT), which step 3 spent a third of wap5 convolve's
// time in. Not the same rounding as FFTPACK: the convolve outputs compared
// (bench/results-nest5.md) came out byte-identical all the same.
type realFFT struct {
	n       int
	rev     []int32      // bit reversal of the indices of n/2
	tw, itw []complex128 // stages of size 8, 16, ..., n/2, concatenated: exp(∓2πi j/m), j < m/2
	w       []complex128 // exp(−2πi k/n), k < n/2
	z       []complex128 // scratch, n/2
}

func newRealFFT(n int) *realFFT {
	if n < 2 || n&(n-1) != 0 {
		panic("convolution: FFT length not a power of two")
	}
	h := n / 2
	f := &realFFT{n: n, rev: make([]int32, h), w: make([]complex128, h), z: make([]complex128, h)}
	lg := bits.TrailingZeros(uint(h))
	for i := range f.rev {
		if lg > 0 {
			f.rev[i] = int32(bits.Reverse32(uint32(i)) >> (32 - lg))
		}
	}
	for m := 8; m <= h; m <<= 1 {
		for j := range m / 2 {
			s, c := math.Sincos(-2 * math.Pi * float64(j) / float64(m))
			f.tw = append(f.tw, complex(c, s))
			f.itw = append(f.itw, complex(c, -s))
		}
	}
	for k := range f.w {
		s, c := math.Sincos(-2 * math.Pi * float64(k) / float64(n))
		f.w[k] = complex(c, s)
	}
	return f
}

// transform is the unnormalised complex FFT of z in place (inverse: with
// exp(+2πi…)); len(z) = n/2.
func (f *realFFT) transform(z []complex128, inverse bool) {
	h := len(z)
	for i, r := range f.rev {
		if int(r) > i {
			z[i], z[r] = z[r], z[i]
		}
	}
	// Stages of size 2 and 4: no multiplications.
	for s := 0; s+1 < h; s += 2 {
		a, b := z[s], z[s+1]
		z[s], z[s+1] = a+b, a-b
	}
	for s := 0; s+3 < h; s += 4 {
		a0, a1, b0, b1 := z[s], z[s+1], z[s+2], z[s+3]
		u1 := complex(imag(b1), -real(b1)) // b1·(−i)
		if inverse {
			u1 = -u1
		}
		z[s], z[s+2] = a0+b0, a0-b0
		z[s+1], z[s+3] = a1+u1, a1-u1
	}
	all := f.tw
	if inverse {
		all = f.itw
	}
	off := 0
	m := 8
	// Two stages (m and 2m) per pass over z: each group of four values
	// goes through both in registers, with the same operations in the
	// same order as one stage after the other (the same result to the
	// bit), reading and writing z half as often.
	for ; 2*m <= h; m <<= 2 {
		half := m / 2
		tw := all[off : off+half : off+half]
		tw2 := all[off+half : off+half+m : off+half+m]
		off += half + m
		for s := 0; s < h; s += 2 * m {
			z0 := z[s : s+half : s+half]
			z1 := z[s+half : s+m : s+m]
			z2 := z[s+m : s+m+half : s+m+half]
			z3 := z[s+m+half : s+2*m : s+2*m]
			t2a, t2b := tw2[:half:half], tw2[half:m:m]
			for j, t := range tw {
				a0, a1, a2, a3 := z0[j], z1[j], z2[j], z3[j]
				// Stage m: (a0, a1) and (a2, a3).
				u := a1 * t
				a1 = a0 - u
				a0 += u
				u = a3 * t
				a3 = a2 - u
				a2 += u
				// Stage 2m: (a0, a2) and (a1, a3).
				u = a2 * t2a[j]
				z2[j] = a0 - u
				z0[j] = a0 + u
				u = a3 * t2b[j]
				z3[j] = a1 - u
				z1[j] = a1 + u
			}
		}
	}
	if m <= h {
		half := m / 2
		tw := all[off : off+half : off+half]
		for s := 0; s < h; s += m {
			a := z[s : s+half : s+half]
			b := z[s+half : s+m : s+m]
			for j, t := range tw {
				u := b[j] * t
				b[j] = a[j] - u
				a[j] += u
			}
		}
	}
}

// Coefficients sets dst[k] = Σ_j x[j]·exp(−2πi jk/n) for k ≤ n/2 and
// returns dst (n/2+1 long); x is n long.
func (f *realFFT) Coefficients(dst []complex128, x []float64) []complex128 {
	h := f.n / 2
	z := f.z
	for m := range z {
		z[m] = complex(x[2*m], x[2*m+1])
	}
	f.transform(z, false)
	dst = dst[:h+1]
	dst[0] = complex(real(z[0])+imag(z[0]), 0)
	dst[h] = complex(real(z[0])-imag(z[0]), 0)
	for k := 1; k < h; k++ {
		a, b := z[k], z[h-k]
		bc := complex(real(b), -imag(b))
		e := (a + bc) * 0.5              // transform of the even samples
		o := (a - bc) * complex(0, -0.5) // of the odd ones
		dst[k] = e + f.w[k]*o
	}
	return dst
}

// Sequence sets dst[j] = Σ_k X[k]·exp(2πi jk/n) over all n frequencies
// (X[n−k] = conj X[k]: the spectrum of a real signal; unnormalised, as
// gonum's) and returns dst (n long); X is n/2+1 long.
func (f *realFFT) Sequence(dst []float64, X []complex128) []float64 {
	h := f.n / 2
	z := f.z
	for k := range z {
		a, b := X[k], X[h-k]
		bc := complex(real(b), -imag(b))
		e := a + bc // twice the even samples' transform
		w := f.w[k]
		o := (a - bc) * complex(real(w), -imag(w)) // twice the odd ones'
		z[k] = e + complex(-imag(o), real(o))      // e + i·o
	}
	f.transform(z, true)
	dst = dst[:f.n]
	for m, v := range z {
		dst[2*m], dst[2*m+1] = real(v), imag(v)
	}
	return dst
}
