package trace

// AccumulatorState is an Accumulator's running sums without its histogram:
// what it takes to save an accumulator and go on from where it was, with
// the same results bit for bit (linking's bounded stream pattern table
// spills accumulators to disk and reads them back).
type AccumulatorState struct {
	W, Mean, S2, Min, Max float64
}

// State returns a's running sums.
func (a *Accumulator) State() AccumulatorState {
	return AccumulatorState{W: a.w, Mean: a.mean, S2: a.s2, Min: a.min, Max: a.max}
}

// Sums returns a's running sums as State does, as five values: a struct
// of five floats is copied through memory (the compiler keeps structs of
// at most four fields in registers), five results stay in registers.
func (a *Accumulator) Sums() (w, mean, s2, min, max float64) {
	return a.w, a.mean, a.s2, a.min, a.max
}

// SetState makes a's running sums s (its histogram stays as it is).
func (a *Accumulator) SetState(s AccumulatorState) {
	a.w, a.mean, a.s2, a.min, a.max = s.W, s.Mean, s.S2, s.Min, s.Max
}
