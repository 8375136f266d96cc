-- run_trials: one row per run and trial (a trial answered from the ledger still belongs to the run).
-- depends_on: run_requests

CREATE OR REPLACE VIEW run_trials AS
SELECT DISTINCT run_id, trial_id, item_id, model, sample_idx FROM run_requests;
