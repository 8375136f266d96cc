-- Macros: which request of a trial's step counts, which response of a request, and which parse of
-- a response.

-- The recency rank of a request among the requests of the same trial and step: 1 is the latest
-- (a chain re-run may rebuild its later steps, so only the latest request of a step counts).
-- Used as `QUALIFY request_recency(trial_id, step, created_at) = 1` by the view latest_requests,
-- by tasks/scoring/score.py, which ranks only the requests its selection names (a run, a day), and
-- by associativity_steps, which ranks only the associativity trials' requests.
CREATE OR REPLACE MACRO request_recency(trial_id, step, created_at) AS
    row_number() OVER (PARTITION BY trial_id, step ORDER BY created_at DESC);

-- The text of a request's last message (its `messages`, JSON): what the model was asked last.
CREATE OR REPLACE MACRO request_content(messages) AS json_extract_string(messages, '$[-1].content');

-- The rank of a response among the responses of the same request: 1 is the one that counts, the
-- first ok one; without one, the latest error. Used as `QUALIFY response_precedence(...) = 1` by
-- the view ledger and by the table macro ledger_of (the ledger of some requests only: a sweep's
-- chunk, the stream's look-up and claims, associativity_steps' requests).
CREATE OR REPLACE MACRO response_precedence(request_id, status, created_at) AS
    row_number() OVER (
        PARTITION BY request_id
        ORDER BY (status = 'ok') DESC, CASE WHEN status = 'ok' THEN created_at END ASC, created_at DESC
    );

-- The recency rank of a parse among the parses of the same response: 1 is the latest written (so
-- of the newest parser version written). Used as `QUALIFY parse_recency(...) = 1` by the view
-- latest_parses and by the table macro latest_parses_of (the latest parses of some responses only).
CREATE OR REPLACE MACRO parse_recency(response_id, created_at) AS
    row_number() OVER (PARTITION BY response_id ORDER BY created_at DESC);
