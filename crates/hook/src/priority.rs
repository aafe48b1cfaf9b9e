//! [`WriterPriority`]: how the writer and I/O threads compete with the training for the CPU.

/// The scheduling priority of the hook's writer and I/O threads
/// ([`crate::HookBuilder::writer_priority`]).
///
/// Training frameworks keep every core busy with their own thread pools (candle, PyTorch's
/// intra-op pool), and those pools wait for each other at barriers: a writer thread that
/// preempts one of their threads, even briefly, stalls the whole operation.
/// [`WriterPriority::Background`] lowers the writer's priority so that the kernel runs it in
/// the gaps the training leaves instead of preempting it. The writer still gets all the CPU
/// time the training does not use, and with [`crate::QueuePolicy::Block`] a writer that
/// falls behind makes the training wait at the full queue, which frees a core for it; so
/// nothing is lost, only the order of work changes.
///
/// The nice value is system-wide: on a machine shared with other busy processes a
/// background writer also yields to them, and a step's files may then be published later
/// (and a hook that waits for its writer, at close or at a full queue, waits longer). So it
/// is a choice for a training job that has the machine to itself, not the default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum WriterPriority {
    /// The writer threads keep the priority of the thread that built the hook. The default.
    #[default]
    Normal,
    /// The writer threads run at the lowest priority, nice 19 (Linux; elsewhere as
    /// [`WriterPriority::Normal`]).
    Background,
}

impl WriterPriority {
    /// Applies this priority to the calling thread. A failure (a sandbox refusing the call)
    /// leaves the thread as it was: the priority is an optimisation, not a contract.
    pub(crate) fn apply_to_current_thread(self) {
        if self == WriterPriority::Normal {
            return;
        }
        #[cfg(target_os = "linux")]
        {
            // On Linux, setpriority(PRIO_PROCESS, tid) sets the nice value of that thread
            // only (a documented departure from POSIX, where it would be the process).
            let tid = rustix::thread::gettid();
            if let Err(e) = rustix::process::setpriority_process(Some(tid), 19) {
                tracing::debug!("lowering the writer thread's priority: {e}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    #[test]
    fn background_lowers_only_the_calling_thread() {
        let before = rustix::process::getpriority_process(None).unwrap();
        let inner = std::thread::spawn(|| {
            WriterPriority::Background.apply_to_current_thread();
            rustix::process::getpriority_process(Some(rustix::thread::gettid())).unwrap()
        })
        .join()
        .unwrap();
        assert_eq!(inner, 19);
        let main = rustix::process::getpriority_process(Some(rustix::thread::gettid())).unwrap();
        assert_eq!(main, before);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn normal_keeps_the_priority() {
        let p = std::thread::spawn(|| {
            WriterPriority::Normal.apply_to_current_thread();
            rustix::process::getpriority_process(Some(rustix::thread::gettid())).unwrap()
        })
        .join()
        .unwrap();
        assert_eq!(p, rustix::process::getpriority_process(None).unwrap());
    }
}
