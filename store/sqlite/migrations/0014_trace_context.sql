-- A sink delivery keeps the W3C trace context (traceparent, tracestate) of the inbox.apply span
-- that queued it, so that each attempt's sink.deliver span is that apply's child, whatever
-- process makes the attempt and however long after (docs/operations.md, Traces).
--
-- Both are NULL when tracing was off at queueing: an attempt then starts a trace of its own.
-- The context is per delivery rather than per event (events.body is shared by every sink of
-- the event): a delivery is queued by one apply, and the claim reads the row's own columns
-- instead of looking the event up once more.
ALTER TABLE sink_deliveries ADD COLUMN traceparent TEXT;
ALTER TABLE sink_deliveries ADD COLUMN tracestate TEXT;
