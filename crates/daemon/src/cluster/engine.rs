//! What the core keeps of the cluster, whichever engine runs it: where each connected agent
//! sits, and what the engine says of places (a pod's priority from the API server, a job
//! step's from its record).

use std::collections::HashMap;

use baton_protocol::ClientId;

use super::place::Place;
use super::pod::PodUpdate;
use super::slurm::SlurmSteps;
use super::table::PodTable;

/// The priority of a process in a pod or job step the daemon cannot tell: Baton's default.
pub(crate) const UNKNOWN_GROUP: i32 = 0;

/// The engine that gives processes their priorities.
enum Engine {
    /// `--kubernetes`: pods, from the API server.
    Kubernetes(PodTable),
    /// `--slurm-steps`: job steps, from the SPANK plugin's records.
    Slurm(SlurmSteps),
}

/// The cluster, and each agent's place in it.
pub(crate) struct Cluster {
    engine: Engine,
    /// Each agent's place, read when it connected.
    places: HashMap<ClientId, Place>,
}

impl Cluster {
    /// Priorities from pods.
    pub(crate) fn kubernetes(pods: PodTable) -> Cluster {
        Cluster::of(Engine::Kubernetes(pods))
    }

    /// Priorities from Slurm's job steps.
    pub(crate) fn slurm(steps: SlurmSteps) -> Cluster {
        Cluster::of(Engine::Slurm(steps))
    }

    fn of(engine: Engine) -> Cluster {
        Cluster {
            engine,
            places: HashMap::new(),
        }
    }

    /// A change to the node's pods.
    pub(crate) fn pods_changed(&mut self, update: PodUpdate) {
        if let Engine::Kubernetes(t) = &mut self.engine {
            t.update(update);
        }
    }

    /// Where process `pid` sits now.
    pub(crate) fn place_of(&self, pid: u32) -> Place {
        match &self.engine {
            Engine::Kubernetes(t) => t.place_of(pid),
            Engine::Slurm(s) => s.place_of(pid),
        }
    }

    /// Whether an agent at `place` must wait: in a pod, before the first list of pods.
    pub(crate) fn must_wait(&self, place: &Place) -> bool {
        match &self.engine {
            Engine::Kubernetes(t) => *place != Place::Node && !t.synced,
            Engine::Slurm(_) => false,
        }
    }

    /// The ceiling (and default) of a process at `place`, and its group's name: `None` for
    /// the node's own.
    pub(crate) fn ceiling(&self, place: &Place) -> Option<(i32, String)> {
        match (place, &self.engine) {
            (Place::Node, _) => None,
            (Place::Step { step, priority }, _) => Some((*priority, step.to_string())),
            (Place::UnknownStep, _) => {
                Some((UNKNOWN_GROUP, "a Slurm job step without a record".into()))
            }
            (Place::Pod { .. } | Place::UnknownPod, Engine::Kubernetes(t)) => t.pod_priority(place),
            (Place::Pod { .. } | Place::UnknownPod, Engine::Slurm(_)) => {
                Some((UNKNOWN_GROUP, "an unknown pod".into()))
            }
        }
    }

    /// Remembers an agent's place.
    pub(crate) fn enter(&mut self, client: ClientId, place: Place) {
        self.places.insert(client, place);
    }

    /// Forgets an agent's place.
    pub(crate) fn forget(&mut self, client: ClientId) {
        self.places.remove(&client);
    }

    /// An agent's place, if it is known.
    pub(crate) fn place_of_client(&self, client: ClientId) -> Option<&Place> {
        self.places.get(&client)
    }
}
