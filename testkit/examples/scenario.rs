//! Writes bundles of the synthetic scenario (`diagwire_testkit::scenario`) for trying
//! `diagwire check` and `diagwire parity` by hand:
//!
//! ```sh
//! cargo run -p diagwire-testkit --example scenario -- OUT
//! ```
//!
//! writes `OUT/small/` (a one-minute run every rule passes), `OUT/sim/` and `OUT/prod/` (a
//! simulated and a production bundle of the same ten-minute scenario, two seeds), and
//! `OUT/prod-shifted/` (the production bundle with successful dials 1.6 times slower).
//! `--bulk MB OUT.tar.gz` writes one long run of about MB megabytes as a `.tar.gz` instead.

use std::path::PathBuf;

use diagwire::v1::WriterKind;
use diagwire_testkit::scenario::{Params, generate};

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [flag, mb, out] if flag == "--bulk" => {
            let mb: u64 = mb.parse().map_err(std::io::Error::other)?;
            generate(&Params::bulk(1, mb)).write_tar_gz(&PathBuf::from(out))?;
            println!("wrote {out}");
        }
        [out] => {
            let out = PathBuf::from(out);
            for (name, params) in [
                ("small", Params::small(1)),
                ("sim", Params::parity(11, WriterKind::Sim)),
                ("prod", Params::parity(22, WriterKind::Collector)),
                ("prod-shifted", {
                    let mut p = Params::parity(22, WriterKind::Collector);
                    p.dial_success_scale = 1.6;
                    p
                }),
            ] {
                let dir = out.join(name);
                std::fs::create_dir_all(&dir)?;
                let written = generate(&params).write_dir(&dir)?;
                println!("wrote {}", written.display());
            }
        }
        _ => {
            eprintln!("usage: scenario OUT | scenario --bulk MB OUT.tar.gz");
            std::process::exit(2);
        }
    }
    Ok(())
}
