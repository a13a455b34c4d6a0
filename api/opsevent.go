package api

// OverdueData is the data of a job.overdue event.
type OverdueData struct {
	JobID string  `json:"job_id"`
	Kind  JobKind `json:"kind"`
	// CreatedAt is when the job was created; Deadline when its end was expected at the latest.
	CreatedAt Time `json:"created_at"`
	Deadline  Time `json:"deadline"`
	// ServiceStatus is the status the service gave (done or error: the callback was lost);
	// empty when the service could not be asked, and then Error says why.
	ServiceStatus JobStatus `json:"service_status,omitempty"`
	Error         string    `json:"error,omitempty"`
}

// ReconciledData is the data of a job.reconciled event.
type ReconciledData struct {
	JobID  string    `json:"job_id"`
	Kind   JobKind   `json:"kind"`
	Status JobStatus `json:"status"`
	// Deliveries counts what was applied in place of lost callbacks: 1 for a pre-recorded
	// job, the missing messages for a live session.
	Deliveries int `json:"deliveries"`
}

// SinkStateData is the data of sink.disabled and sink.enabled events.
type SinkStateData struct {
	Sink     string `json:"sink"`
	Disabled bool   `json:"disabled"`
	Reason   string `json:"reason,omitempty"`
	Since    Time   `json:"since"`
}

// InboxFailedData is the data of an inbox.failed event.
type InboxFailedData struct {
	InboxID  int64        `json:"inbox_id"`
	JobID    string       `json:"job_id"`
	Kind     CallbackKind `json:"kind"`
	Event    string       `json:"event"`
	Attempts int          `json:"attempts"`
	Error    string       `json:"error"`
}
