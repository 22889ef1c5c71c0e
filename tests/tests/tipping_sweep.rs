//! The tipping sweep (`tumble_tests::tipping`): every case past balance falls and every case before it stands,
//! stepped freely and under state quantization. `make bench` prints the same table (`tipping-sweep`).

use tumble_tests::tipping::{run_tipping_sweep, tipping_markdown};

#[test]
fn past_balance_falls_and_before_balance_stands() {
    let rows = run_tipping_sweep();
    println!("{}", tipping_markdown(&rows));
    let failed: Vec<_> = rows.iter().filter(|r| !r.passed()).cloned().collect();
    assert!(
        failed.is_empty(),
        "{} of {} cases failed:\n{}",
        failed.len(),
        rows.len(),
        tipping_markdown(&failed)
    );
}
