//! [`HookBuilder::build`]: a running [`Hook`] from a builder's settings. It opens the
//! trial's store, resolves the collections and what they save, works out what this worker
//! writes and where, and starts the writer thread.

use crate::builder::HookBuilder;
use crate::decisions::SaveDecisions;
use crate::error::{HookError, Result};
use crate::hook::{Hook, HookParts, Outputs, RecordedCollections};
use crate::queue::WriterQueue;
use crate::recorder_wiring::RecorderWiring;
use crate::stop::StopSignalWatch;
use crate::writer::{TbTarget, WriterConfig};
use smdebug_config::{CollectionManager, IncludeWorkers, ReductionConfig};
use smdebug_index::{
    flight_recorder_manifest_key, stop_signal_key, tensorboard_worker, validate_worker,
    DEFAULT_TENSORBOARD_DIR, END_OF_JOB_FILE, FLIGHT_RECORDER_TRIGGER_FILE, RULE_STOP_SIGNAL_ENV,
};
use smdebug_storage::{BlockingStore, Location};
use std::sync::Arc;

impl HookBuilder {
    /// Checks the settings, refuses an out_dir holding a finished trial, and starts the
    /// writer thread.
    pub fn build(self) -> Result<Hook> {
        if self.queue_capacity == 0 {
            return Err(HookError::InvalidSetting {
                setting: "queue_capacity",
                reason: "must be at least 1".into(),
            });
        }
        if self.num_workers < 1 {
            return Err(HookError::InvalidSetting {
                setting: "num_workers",
                reason: format!("{} is not a number of workers", self.num_workers),
            });
        }
        start(self)
    }
}

/// Assembles the hook of settings `b` (checked already).
fn start(b: HookBuilder) -> Result<Hook> {
    validate_worker(&b.worker)?;
    let store = Arc::new(match &b.storage {
        Some(storage) => BlockingStore::new(Arc::clone(storage))?,
        None => BlockingStore::open_with(&Location::parse(&b.out_dir)?, &b.storage_options)?,
    });
    // smdebug refuses an out_dir whose job already ended (it checks local paths only;
    // this hook checks every backend).
    if store.exists(END_OF_JOB_FILE)? {
        return Err(HookError::FinishedTrial {
            location: b.out_dir.clone(),
        });
    }
    let decisions = save_decisions(&b)?;

    let writes = b.include_workers == IncludeWorkers::All || b.worker == "worker_0";
    let num_workers_meta = match b.include_workers {
        IncludeWorkers::All => b.num_workers,
        IncludeWorkers::One => 1,
    };
    let flavor = b.flavor.unwrap_or(b.framework.reduction_flavor());
    let reduction_shape = b.reduction_shape.unwrap_or(b.framework.reduction_shape());
    let tb_target = tensorboard_target(&b, &store)?;
    let tensorboard = tb_target.is_some();

    let stop_key = stop_signal_key(
        b.stop_signal_file.as_deref(),
        std::env::var(RULE_STOP_SIGNAL_ENV).ok().as_deref(),
    )?;

    let recorder = match &b.recorder {
        Some(r) if writes => Some(RecorderWiring {
            cfg: r.clone(),
            stop_key: stop_key.clone(),
            trigger_key: FLIGHT_RECORDER_TRIGGER_FILE.to_owned(),
            manifest_key: flight_recorder_manifest_key(&b.worker)?,
        }),
        _ => None,
    };
    let recorded = recorder
        .as_ref()
        .map(|r| RecordedCollections::new(r.cfg.collections.clone()));
    let cfg = WriterConfig {
        store: store.clone(),
        worker: b.worker.clone(),
        flavor,
        reduction_shape,
        tensorboard: tb_target,
        recorder,
        priority: b.writer_priority,
    };
    let queue = WriterQueue::start(cfg, b.queue_policy, b.queue_capacity)?;

    Ok(Hook::assemble(HookParts {
        store,
        out_dir: b.out_dir.clone(),
        worker: b.worker.clone(),
        init_step: b.init_step,
        decisions,
        outputs: Outputs {
            writes,
            num_workers_meta,
            write_collections: b.write_collections,
            end_marker: b.end_marker,
            tensorboard,
            wall_time: b.wall_time.clone(),
            tensorboard_dir: b.configured_tensorboard_dir(),
        },
        queue,
        stop: StopSignalWatch::new(stop_key, b.stop_check_interval),
        recorded,
    }))
}

/// The collections of `b` (the framework's defaults, the hook configuration's, the
/// builder's own) and which of them are saved, with what.
fn save_decisions(b: &HookBuilder) -> Result<SaveDecisions> {
    let mut cm = if b.default_collections {
        CollectionManager::with_defaults(b.framework)?
    } else {
        CollectionManager::new()
    };
    if let Some(config) = &b.hook_config {
        config.apply_to(&mut cm)?;
    }
    for c in &b.collections {
        cm.add(c.clone());
    }
    let (framework_defaults, always): (Vec<String>, Vec<String>) = if b.default_collections {
        (
            b.framework
                .default_collections()
                .into_iter()
                .map(|(n, _)| n.to_owned())
                .collect(),
            b.framework
                .default_include_collections()
                .iter()
                .map(|s| (*s).to_owned())
                .collect(),
        )
    } else {
        (Vec::new(), Vec::new())
    };
    let mut include: Vec<String> = Vec::new();
    for n in b.include_collections.iter().flatten().chain(always.iter()) {
        if !include.contains(n) {
            include.push(n.clone());
        }
    }
    if !b.include_regex.is_empty() {
        let d = cm.get_or_create(smdebug_config::keys::DEFAULT);
        for r in &b.include_regex {
            d.include(r)?;
        }
        if !include.iter().any(|n| n == smdebug_config::keys::DEFAULT) {
            include.push(smdebug_config::keys::DEFAULT.into());
        }
    }
    if b.save_all {
        cm.get_or_create(smdebug_config::keys::ALL).include(".*")?;
        if !include.iter().any(|n| n == smdebug_config::keys::ALL) {
            include.push(smdebug_config::keys::ALL.into());
        }
    }
    SaveDecisions::new(
        cm,
        framework_defaults,
        include,
        b.default_save_config(),
        b.reduction_config
            .clone()
            .unwrap_or_else(ReductionConfig::raw_only),
    )
}

/// Where TensorBoard files go: the builder's folder, or `tensorboard/` inside the trial
/// when exported there; `None`: no TensorBoard output.
fn tensorboard_target(b: &HookBuilder, store: &Arc<BlockingStore>) -> Result<Option<TbTarget>> {
    Ok(match (&b.tensorboard_dir, b.export_tensorboard) {
        (Some(dir), _) => {
            let loc = Location::parse(dir)?;
            Some(TbTarget {
                store: Arc::new(BlockingStore::open_with(&loc, &b.storage_options)?),
                prefix: String::new(),
                worker: tensorboard_worker(std::process::id(), &hostname()),
            })
        }
        (None, true) => Some(TbTarget {
            store: store.clone(),
            prefix: format!("{DEFAULT_TENSORBOARD_DIR}/"),
            worker: tensorboard_worker(std::process::id(), &hostname()),
        }),
        (None, false) => None,
    })
}

/// This machine's name, for TensorBoard file names (`localhost` when unknown).
fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "localhost".into())
}
