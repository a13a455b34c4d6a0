-- Sink replay and history: indexes on sink_deliveries by queue time and by sink.
--
-- ReplaySink selects the events first queued in a window by their deliveries' created_at
-- (sink_deliveries_created); SinkHistory pages a sink's deliveries newest first by id
-- (sink_deliveries_sink). Neither index is partial: replay and history read every status.
CREATE INDEX sink_deliveries_created ON sink_deliveries (created_at);
CREATE INDEX sink_deliveries_sink ON sink_deliveries (sink, id);
