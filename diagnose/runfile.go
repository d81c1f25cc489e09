package diagnose

// RunFile is a run directory's diagnosis.json: every trial's analysis.
type RunFile struct {
	FormatVersion int     `json:"format_version"`
	Confirm       int     `json:"confirm"`
	PeriodNs      int64   `json:"period_ns"` // the snapshot period analysed
	Trials        []Trial `json:"trials"`
	// Skipped lists the trials that could not be diagnosed, and why.
	Skipped []string `json:"skipped,omitempty"`
}

// Trial is one trial's diagnosis.
type Trial struct {
	N       int     `json:"n"`
	Rate    float64 `json:"rate"`
	Purpose string  `json:"purpose"`
	Pass    bool    `json:"pass"`
	*Diagnosis
}

// FormatVersion of diagnosis.json.
const FormatVersion = 1
