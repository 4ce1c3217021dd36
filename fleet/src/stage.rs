//! A stage of the export's pipeline: a named thread fed through a bounded channel, whose result
//! (or error) is taken when it is joined. The row builders and the Parquet encoder are such
//! stages. A few lines over `std::sync::mpsc` and `std::thread`, written here because what they
//! add is the error path: a stage that stopped early is joined and its own error returned, so the
//! feeding side reports why, not merely that the channel closed.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::thread::{self, JoinHandle};

use crate::Error;

/// A running stage taking `T`s and giving an `R` when joined.
pub struct Stage<T, R> {
    inbox: Option<SyncSender<T>>,
    thread: Option<JoinHandle<Result<R, Error>>>,
    /// The file the stage works on, where its own failures are located.
    at: PathBuf,
    name: &'static str,
}

impl<T: Send + 'static, R: Send + 'static> Stage<T, R> {
    /// Starts `work` on a thread named `name`, fed at most `depth` items ahead.
    pub fn start(
        name: &'static str,
        depth: usize,
        at: &Path,
        work: impl FnOnce(Receiver<T>) -> Result<R, Error> + Send + 'static,
    ) -> Result<Stage<T, R>, Error> {
        let (inbox, received) = mpsc::sync_channel::<T>(depth);
        let thread = thread::Builder::new()
            .name(name.into())
            .spawn(move || work(received))
            .map_err(|e| Error::at(at, e.to_string()))?;
        Ok(Stage {
            inbox: Some(inbox),
            thread: Some(thread),
            at: at.to_owned(),
            name,
        })
    }

    /// Hands `item` over, waiting while the stage is `depth` items behind. A stage that stopped
    /// is joined: its error is returned.
    pub fn send(&mut self, item: T) -> Result<(), Error> {
        if self.inbox.as_ref().is_some_and(|i| i.send(item).is_ok()) {
            return Ok(());
        }
        Err(self
            .join()
            .err()
            .unwrap_or_else(|| Error::at(&self.at, format!("the {} thread stopped", self.name))))
    }

    /// Closes the channel without waiting: the stage finishes what it was sent while the caller
    /// goes on (several stages end side by side); [`Stage::join`] takes the result.
    pub fn close(&mut self) {
        self.inbox = None;
    }

    /// Closes the channel and waits for the stage to finish what it was sent.
    pub fn join(&mut self) -> Result<R, Error> {
        self.inbox = None;
        match self.thread.take() {
            Some(handle) => handle.join().unwrap_or_else(|_| {
                Err(Error::at(
                    &self.at,
                    format!("the {} thread panicked", self.name),
                ))
            }),
            None => Err(Error::at(
                &self.at,
                format!("the {} thread stopped", self.name),
            )),
        }
    }
}

impl<T, R> Drop for Stage<T, R> {
    fn drop(&mut self) {
        // Dropped on an error path: the thread ends with its channel; wait for it.
        self.inbox = None;
        if let Some(handle) = self.thread.take() {
            let _ = handle.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stage_that_failed_gives_its_own_error_to_the_side_feeding_it() {
        let at = Path::new("table.parquet");
        let mut stage = Stage::start("test", 1, at, |items: Receiver<u32>| {
            for i in items {
                if i == 3 {
                    return Err(Error::at(Path::new("table.parquet"), "item 3 is bad"));
                }
            }
            Ok(())
        })
        .unwrap();
        let failed = (0..100).map(|i| stage.send(i)).find_map(Result::err);
        let message = failed
            .expect("a send fails once the stage stopped")
            .to_string();
        assert!(message.contains("item 3 is bad"), "{message}");
    }

    #[test]
    fn a_joined_stage_gives_what_it_made_of_everything_sent() {
        let mut stage = Stage::start("test", 2, Path::new("x"), |items: Receiver<u32>| {
            Ok(items.iter().sum::<u32>())
        })
        .unwrap();
        for i in 1..=10 {
            stage.send(i).unwrap();
        }
        assert_eq!(stage.join().unwrap(), 55);
    }

    #[test]
    fn stages_closed_before_either_is_joined_finish_side_by_side() {
        // Each stage ends only when the other has been told to end too: joined one after the
        // other without closing both first, the first join would wait for ever.
        let both = std::sync::Arc::new(std::sync::Barrier::new(2));
        let mut stages: Vec<Stage<u32, u32>> = (0..2)
            .map(|_| {
                let both = both.clone();
                Stage::start("test", 2, Path::new("x"), move |items: Receiver<u32>| {
                    let sum = items.iter().sum::<u32>();
                    both.wait();
                    Ok(sum)
                })
                .unwrap()
            })
            .collect();
        for (i, stage) in stages.iter_mut().enumerate() {
            stage.send(i as u32 + 1).unwrap();
            stage.close();
        }
        let sums: Vec<u32> = stages.iter_mut().map(|s| s.join().unwrap()).collect();
        assert_eq!(sums, [1, 2]);
    }
}
