//! The upgrade of the simulator's prod-shape directory into the contract's bundle, as a spec.
//!
//! Each table below is one concern: which directories are recognized, which are refused, what an
//! upgraded bundle holds, and what is listed as not mapped (and where). Every case is one test,
//! named after the behaviour it guards. Every upgrade a case runs is also held to the rules that
//! apply to all of them ([`upgraded`]): it validates clean, its manifest carries the contract
//! version and a `sim` writer and agrees with the files, and it is deterministic.
//!
//! The cases live in one module per concern: `support` (the inputs and the rules every upgrade
//! follows), `recognition`, `refusals`, `bundle` (what an upgraded bundle holds) and `unmapped`
//! (what is listed as not mapped, and where).

mod bundle;
mod limits;
mod recognition;
mod refusals;
mod support;
mod unmapped;
