package score

import (
	"bufio"
	"fmt"
	"io"
)

// WriteText writes the report as a readable table.
func WriteText(w io.Writer, r *Report) error {
	b := bufio.NewWriter(w)
	fmt.Fprintf(b, "%s (%s) against %d truth instances in %d patterns (%d messages)\n\n",
		orDash(r.Algorithm), r.View, r.Truth.Instances, r.Truth.Patterns, r.Truth.Messages)
	fmt.Fprintf(b, "%-20s %10s %10s %10s %9s %7s\n", "", "TP", "FP", "FN", "precision", "recall")
	row := func(name string, c Counts) {
		fmt.Fprintf(b, "%-20s %10s %10s %10s %9.3f %7.3f\n", name, num(c.TP), num(c.FP), num(c.FN), c.Precision, c.Recall)
	}
	row("patterns", r.Patterns)
	if c := r.ChainsContained; c != nil {
		fmt.Fprintf(b, "%-20s %10d %10s %10s %9s %7.3f   (truth chains inside an inferred chain)\n", "chains contained", c.Found, "", "", "", c.Recall)
	}
	row("instances (counts)", r.InstancesByCount)
	row("messages (counts)", r.MessagesByCount)
	if in := r.Instances; in != nil {
		fmt.Fprintf(b, "%-20s %10d %10d %10d %9.3f %7.3f   (weighted precision %.3f; %d of %d messages on correct paths)\n",
			"instances (sets)", in.Correct, in.Inferred-in.Correct, r.Truth.Instances-in.TruthFound, in.Precision, in.Recall,
			in.WeightedPrecision, in.MessagesCorrect, in.MessagesTotal)
	}
	d := r.Delays
	fmt.Fprintf(b, "\ndelays of correctly inferred patterns: %d steps, mean relative error %.1f%%, max %.1f%% (top patterns), mean absolute %.3f ms\n",
		d.Steps, 100*d.MeanRelErr, 100*d.MaxRelErr, 1e3*d.MeanAbsErr)

	fmt.Fprintf(b, "\ntop-N false negatives (Project 5 Figure 17)\n%4s %4s %6s %7s %8s\n", "N", "FN", "rate", "FN tol", "rate tol")
	for _, p := range r.TopN {
		fmt.Fprintf(b, "%4d %4d %6.3f %7d %8.3f\n", p.N, p.FN, p.Rate, p.FNTol, p.RateTol)
	}
	if len(r.Missing) > 0 {
		fmt.Fprintf(b, "\ntruth patterns not inferred (truth rank, count, pattern)\n")
		for _, p := range r.Missing {
			fmt.Fprintf(b, "%4d %7d  %s\n", p.TruthRank, p.Truth, clip(p.Key))
		}
	}
	if len(r.False) > 0 {
		fmt.Fprintf(b, "\ninferred patterns that are not in the truth (rank, count, pattern)\n")
		for _, p := range r.False {
			fmt.Fprintf(b, "%4d %7s  %s\n", p.Rank, num(p.Inferred), clip(p.Key))
		}
	}
	if len(r.Matched) > 0 {
		fmt.Fprintf(b, "\ncorrectly inferred patterns (truth rank/count, inferred rank/count) and their delays\n")
		for _, p := range r.Matched {
			fmt.Fprintf(b, "%4d %7d  #%d %s  %s\n", p.TruthRank, p.Truth, p.Rank, num(p.Inferred), clip(p.Key))
			for _, s := range p.Steps {
				rel := "-"
				if s.RelErr != nil {
					rel = fmt.Sprintf("%.1f%%", 100**s.RelErr)
				}
				fmt.Fprintf(b, "       %-30s %-7s true %9.3f ms  inferred %9.3f ms  error %s\n",
					clip30(s.From+">"+s.To), s.What, 1e3*s.TrueS, 1e3*s.Inferred, rel)
			}
		}
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(b, "warning: %s\n", w)
	}
	return b.Flush()
}

func num(x float64) string {
	if x == float64(int64(x)) {
		return fmt.Sprintf("%d", int64(x))
	}
	return fmt.Sprintf("%.1f", x)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func clip(s string) string {
	if len(s) > 160 {
		return s[:157] + "..."
	}
	return s
}

func clip30(s string) string {
	if len(s) > 30 {
		return s[:27] + "..."
	}
	return s
}
