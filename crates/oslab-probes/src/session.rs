//! A measuring session: the machine read once, the cpus chosen and checked before anything is
//! measured, the measuring thread pinned and raised, and the harness and probe context built from
//! them. Every measuring command and the plausibility tests use this one.

use crate::{Context, Harness, HarnessConfig, Options};
use oslab_core::machine::Machine;
use oslab_core::pace::Pace;
use oslab_core::topology::TopologyError;
use oslab_core::CpuSet;
use oslab_os::affinity::{get_affinity, AffinityGuard, PlacementError, SchedGuard};
use oslab_os::placement::{self, Misplaced};
use std::time::Duration;

/// Real-time priority for the measuring thread: high enough to keep ordinary tasks off the CPU,
/// low enough to leave kernel threads at higher RT priorities alone.
const RT_PRIORITY: i32 = 50;

/// Why a session could not start.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The topology could not be read.
    #[error(transparent)]
    Topology(#[from] TopologyError),
    /// Our affinity mask could not be read.
    #[error("cannot read this process's affinity mask: {0}")]
    Affinity(std::io::Error),
    /// The cpus asked for cannot be used (a usage error).
    #[error(transparent)]
    Misplaced(#[from] Misplaced),
}

/// The machine and the cpus of one measuring command.
pub struct Session {
    /// The machine.
    pub machine: Machine,
    /// CPUs we may use.
    pub allowed: CpuSet,
    /// The measuring CPU.
    pub cpu: usize,
    /// The peer CPU, when there is one.
    pub peer_cpu: Option<usize>,
    /// Its budgets.
    pub pace: Pace,
}

/// Guards that undo the pinning and priority change when dropped, and what was not permitted.
pub struct Placement {
    _pin: AffinityGuard,
    _rt: Option<SchedGuard>,
    /// Why the thread runs at normal priority although real time was asked for.
    pub note: Option<String>,
}

impl Session {
    /// Reads the machine and chooses the measuring cpu and its peer (as the user named them, or
    /// [`placement::choose`]'s defaults: isolated cpus first, the affinity widened to them).
    pub fn open(
        pace: Pace,
        cpu: Option<placement::Named>,
        peer: Option<placement::Named>,
    ) -> Result<Session, SessionError> {
        let calibration = match pace {
            Pace::Quick => Duration::from_millis(50),
            Pace::Full => Duration::from_millis(200),
        };
        let machine = oslab_os::machine::read(calibration)?;
        let allowed = get_affinity(0).map_err(SessionError::Affinity)?;
        let (allowed, isolated) = oslab_os::affinity::widened_to_isolated(allowed);
        let (cpu, peer_cpu) = placement::choose(&machine.topology, &allowed, &isolated, cpu, peer)?;
        Ok(Session {
            machine,
            allowed,
            cpu,
            peer_cpu,
            pace,
        })
    }

    /// Pins the calling thread to the measuring CPU and, unless `no_rt`, raises it to SCHED_FIFO
    /// when permitted (saying why not in the placement's note).
    pub fn place(&self, no_rt: bool) -> Result<Placement, PlacementError> {
        let pin = AffinityGuard::pin_current(&CpuSet::single(self.cpu))?;
        let (rt, note) = match no_rt {
            true => (None, None),
            false => match SchedGuard::fifo(RT_PRIORITY) {
                Ok(g) => (Some(g), None),
                Err(e) => (None, Some(format!("measuring at normal priority: {e}"))),
            },
        };
        Ok(Placement {
            _pin: pin,
            _rt: rt,
            note,
        })
    }

    /// A harness with this session's budgets.
    pub fn harness(&self) -> Harness {
        self.harness_with(HarnessConfig::suite(self.pace))
    }

    /// A harness with other budgets (tests use short ones).
    pub fn harness_with(&self, config: HarnessConfig) -> Harness {
        Harness::new(self.machine.clock().clone(), config)
    }

    /// A probe context.
    pub fn context<'a>(&'a self, harness: &'a Harness, options: &'a Options) -> Context<'a> {
        Context {
            harness,
            topology: &self.machine.topology,
            environment: &self.machine.environment,
            fingerprint: &self.machine.fingerprint,
            cpu: self.cpu,
            peer_cpu: self.peer_cpu,
            allowed: self.allowed.clone(),
            options,
        }
    }
}
