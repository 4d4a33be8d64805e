//! The daily token cap, per call: what a call may ask for and read within what is left of the
//! day's cap, and what it is charged.
//!
//! Architecture Invariant: no call is started whose worst case could take the day past the cap.
//! A call asks for at most what is left once its prompt is counted (`max_tokens`), and its answer
//! is read only while the tokens counted here over the whole body (envelope and escapes included,
//! which count at least as much as the message they carry) fit what is left: an endpoint that
//! ignores `max_tokens` is cut off, charged what was sent and the tokens read, and its answer
//! fails the job. The charge counted here can then never take the day past the cap; only an
//! endpoint's own `usage`, when it reports more than was counted here, is charged as it says.

/// Tokens of the JSON an endpoint wraps its message in (id, model, choices, usage…: about a
/// kilobyte), left room for when the answer is read.
pub(super) const ENVELOPE_TOKENS: u64 = 256;

/// The least answer a call is made for: the least `max_output_tokens` the config accepts, about
/// one experience. With less room left today, jobs wait for the next day.
pub(super) const MIN_ANSWER_TOKENS: u64 = 100;

/// An answer is read up to this many times the tokens asked for (and its envelope), even when
/// more is left of the day: an endpoint does not count tokens as they are counted here (a CJK
/// text escaped as `\uXXXX` counts 1.5 tokens a character here), but one that answers four times
/// more than it was asked ignores `max_tokens`, and must not spend the day's cap in one call.
pub(super) const READ_FACTOR: u64 = 4;

/// The most one call is charged: an endpoint's `usage` can claim anything (2^64 - 1 wrapped the
/// day's sum), and past this the day's cap is long reached anyway.
pub(super) const MAX_CHARGE: u64 = u32::MAX as u64;

/// What one call may spend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Allowance {
    /// The request's `max_tokens`.
    pub(crate) asked: u32,
    /// The most of the answer read, in tokens counted here over its whole body.
    pub(crate) read_limit: u64,
    /// The read limit is what is left of today's cap, not a multiple of what was asked.
    pub(crate) by_cap: bool,
}

/// The allowance of a call whose prompt counts `prompt` tokens, with `remaining` tokens left of
/// today's cap and `configured` the config's `max_output_tokens`; `None` when the prompt and the
/// least answer (and its envelope) do not fit.
pub(super) fn allowance(configured: u32, remaining: u64, prompt: u64) -> Option<Allowance> {
    let room = remaining.checked_sub(prompt)?;
    if room < MIN_ANSWER_TOKENS + ENVELOPE_TOKENS {
        return None;
    }
    let asked = u64::from(configured).min(room - ENVELOPE_TOKENS);
    let by_factor = asked.saturating_mul(READ_FACTOR).saturating_add(ENVELOPE_TOKENS);
    Some(Allowance { asked: asked as u32, read_limit: by_factor.min(room), by_cap: room <= by_factor })
}

/// The least a job whose prompt counts `prompt` tokens needs of a day: more than the whole cap,
/// and it can never run.
pub(super) fn least_needed(prompt: u64) -> u64 {
    prompt.saturating_add(MIN_ANSWER_TOKENS + ENVELOPE_TOKENS)
}

/// Why an answer was cut off once more than `allowance.read_limit` tokens were read.
pub(super) fn over_allowance_reason(allowance: &Allowance) -> String {
    let limit = allowance.read_limit;
    let why = if allowance.by_cap {
        "what was left of today's token cap".to_owned()
    } else {
        format!("{READ_FACTOR} times what was asked, and its envelope")
    };
    format!(
        "the endpoint answered more than the {} tokens asked for (max_tokens): reading stopped at {limit} tokens \
         counted here ({why}); the answer was not used, and the tokens sent and read were charged",
        allowance.asked
    )
}

/// The tokens a call is charged: the larger of what the endpoint reports and what was counted
/// here (sent and received), so that an endpoint reporting 0 cannot spend past the cap, and at
/// most [`MAX_CHARGE`].
pub(super) fn charged(reported: Option<u64>, sent: u64, answer: &str) -> u64 {
    let counted = sent.saturating_add(kb_extract::estimate_tokens(answer) as u64);
    reported.unwrap_or(0).max(counted).min(MAX_CHARGE)
}

/// Counts the text of `bytes[from..]` into `tally`, up to a character cut at the end (counted
/// with the next piece); bytes that are not UTF-8 count as other characters. Returns where the
/// count stopped.
pub(super) fn tally_utf8(tally: &mut kb_extract::TokenTally, bytes: &[u8], mut from: usize) -> usize {
    loop {
        match std::str::from_utf8(&bytes[from..]) {
            Ok(text) => {
                tally.add(text);
                return bytes.len();
            }
            Err(error) => {
                let valid = from + error.valid_up_to();
                if let Ok(text) = std::str::from_utf8(&bytes[from..valid]) {
                    tally.add(text);
                }
                match error.error_len() {
                    None => return valid,
                    Some(invalid) => {
                        tally.add_other(invalid as u64);
                        from = valid + invalid;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_asks_for_at_most_what_is_left_and_none_is_made_without_room_for_an_answer() {
        // Plenty left: the configured answer, read up to four times it.
        let plenty = allowance(1_200, 200_000, 2_000).unwrap();
        assert_eq!((plenty.asked, plenty.read_limit, plenty.by_cap), (1_200, 5_056, false));
        // Little left: asked for what is left after the envelope, read up to what is left.
        let little = allowance(1_200, 2_900, 2_000).unwrap();
        assert_eq!((little.asked, little.read_limit, little.by_cap), (644, 900, true));
        // The prompt and the least answer do not fit: no call.
        assert_eq!(allowance(1_200, 2_355, 2_000), None);
        assert_eq!(allowance(1_200, 1_000, 2_000), None);
        assert!(allowance(1_200, 2_356, 2_000).is_some());
        assert_eq!(least_needed(2_000), 2_356);
    }

    #[test]
    fn a_piecewise_count_is_the_whole_texts_count() {
        let text = "résumé 部署失败 deploy ok \u{1F600} 한국어 ...";
        let bytes = text.as_bytes();
        for cut in 0..bytes.len() {
            let mut tally = kb_extract::TokenTally::default();
            let mut counted = tally_utf8(&mut tally, &bytes[..cut], 0);
            counted = tally_utf8(&mut tally, bytes, counted);
            assert_eq!(counted, bytes.len());
            assert_eq!(tally.tokens(), kb_extract::estimate_tokens(text) as u64, "cut at {cut}");
        }
        let mut tally = kb_extract::TokenTally::default();
        assert_eq!(tally_utf8(&mut tally, b"ab\xffcd", 0), 5);
        assert_eq!(tally.tokens(), 2);
    }
}
