-- Job records and queued events written before callback URLs were redacted (api.RedactRequestParams)
-- hold per-job callback tokens in clear, in request_params.callback_config.url: a token is 43
-- base64url characters after /v1/callbacks/, up to the end of the JSON string. They become
-- [token], as every record written since; the rest of the bytes stay as they are.
UPDATE jobs SET record = convert_to(regexp_replace(convert_from(record, 'UTF8'),
        '/v1/callbacks/[A-Za-z0-9_-]{43}"', '/v1/callbacks/[token]"', 'g'), 'UTF8')
WHERE position('/v1/callbacks/'::bytea IN record) > 0;

UPDATE sink_deliveries SET event = convert_to(regexp_replace(convert_from(event, 'UTF8'),
        '/v1/callbacks/[A-Za-z0-9_-]{43}"', '/v1/callbacks/[token]"', 'g'), 'UTF8')
WHERE position('/v1/callbacks/'::bytea IN event) > 0;
