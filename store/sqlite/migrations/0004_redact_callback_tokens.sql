-- Job records and queued events written before callback URLs were redacted (api.RedactRequestParams)
-- hold per-job callback tokens in clear, in request_params.callback_config.url: a token is 43
-- base64url characters after /v1/callbacks/, up to the end of the JSON string. They become
-- [token], as every record written since. Events already delivered keep their event id.
UPDATE jobs SET record = replace(record, substr(record, instr(record, '/v1/callbacks/') + 14, 43), '[token]')
WHERE instr(record, '/v1/callbacks/') > 0
  AND substr(record, instr(record, '/v1/callbacks/') + 57, 1) = '"'
  AND instr(substr(record, instr(record, '/v1/callbacks/') + 14, 43), '"') = 0
  AND instr(substr(record, instr(record, '/v1/callbacks/') + 14, 43), '\') = 0;

UPDATE sink_deliveries SET event = replace(event, substr(event, instr(event, '/v1/callbacks/') + 14, 43), '[token]')
WHERE instr(event, '/v1/callbacks/') > 0
  AND substr(event, instr(event, '/v1/callbacks/') + 57, 1) = '"'
  AND instr(substr(event, instr(event, '/v1/callbacks/') + 14, 43), '"') = 0
  AND instr(substr(event, instr(event, '/v1/callbacks/') + 14, 43), '\') = 0;
