//! The deterministic executor's choice of what runs next: the ready set
//! and the seeded strategies over it.
//!
//! A *strand* is what a strategy schedules: a task from the moment it is
//! made ready until it returns, or a program thread. Strands are numbered
//! in creation order, which the deterministic executor makes a function of
//! the seed. At a scheduling point the candidates are the strand that ran
//! (when it can go on), the ready strands that already have a thread
//! (program threads, tasks parked at a scheduling point or woken from an
//! await) and, when a worker thread is free or can be started, the ready
//! tasks that have not started yet.
//!
//! - **Random**: uniformly among the candidates, from a PCG stream
//!   ([`oorandom::Rand64`]) seeded by the seed.
//! - **PCT** (probabilistic concurrency testing, Burckhardt, Kothari,
//!   Musuvathi, Nagarakatte, ASPLOS 2010), as `shuttle`'s `PctScheduler`
//!   applies it to dynamically created tasks: every strand gets a random
//!   priority when it is created (a random key; keys of all strands form a
//!   uniformly random order), the highest-priority candidate always runs,
//!   and at `depth - 1` change points, steps drawn uniformly from
//!   `1..=steps` before the run, the strand that ran is lowered below every
//!   initial priority (the i-th point to priority i). A step is a decision
//!   between two or more candidates. For a bug of depth `d` among `n`
//!   strands and `k` steps, one run finds it with probability at least
//!   `1 / (n * k^(d-1))`. Unlike shuttle, which learns `k` from its first
//!   runs, `steps` is part of the spec, so one seed always means one
//!   schedule (the harness measures it once and passes it on).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use oorandom::Rand64;

use crate::exec::deterministic::spec::{Policy, Spec};

/// A schedulable strand (see the module doc), numbered from 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) struct Strand(pub(crate) u64);

/// Where a ready strand waits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Waiting {
    /// It has a thread: a program thread, or a task that started.
    OnThread,
    /// A task that needs a worker thread to start.
    ForThread,
}

/// What a decision picked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Choice {
    /// The strand that ran goes on.
    Current,
    /// A ready strand (taken out of the ready set), and where it waited.
    Ready(Strand, Waiting),
    /// No candidate at all.
    Nothing,
}

/// The ready strands of one kind.
enum Pool {
    /// For the random strategy: any order, O(1) removal by index.
    Unordered(Vec<Strand>),
    /// For PCT: by priority key, highest first (ties: oldest strand).
    ByPriority(BinaryHeap<(u64, Reverse<Strand>)>),
}

impl Pool {
    fn len(&self) -> usize {
        match self {
            Pool::Unordered(v) => v.len(),
            Pool::ByPriority(h) => h.len(),
        }
    }

    fn top(&self) -> Option<(u64, Reverse<Strand>)> {
        match self {
            Pool::ByPriority(h) => h.peek().copied(),
            Pool::Unordered(_) => None,
        }
    }
}

/// PCT's state: the strands' keys and the change points.
struct Pct {
    keys: HashMap<Strand, u64>,
    /// `(step, key)`: at that step the strand that ran gets that key.
    change_points: Vec<(u64, u64)>,
    /// The smallest initial key: above every change point's.
    min_key: u64,
}

/// A seeded strategy and the ready set it chooses from.
pub(super) struct Strategy {
    rng: Rand64,
    pct: Option<Pct>,
    on_thread: Pool,
    for_thread: Pool,
    next_strand: u64,
    steps: u64,
    /// Test-only: a choice sequence to follow instead of the seeded stream
    /// (the exhaustive hand-off tests, `exhaustive.rs`).
    #[cfg(test)]
    pub(super) script: Option<Script>,
}

/// Test-only: a strategy that follows a given sequence of choices, for a
/// stateless depth-first model checker over the executor's own choice
/// points. At the i-th decision between two or more candidates it takes
/// candidate `prefix[i]` (past the prefix: the first), in the order the
/// current strand, the ready strands with a thread, the ready tasks
/// without one (each pool in its vector's order, a function of the
/// choices so far), and logs `(chosen, candidates)`.
#[cfg(test)]
#[derive(Debug, Default)]
pub(super) struct Script {
    pub(super) prefix: Vec<usize>,
    pub(super) log: Vec<(usize, usize)>,
}

#[cfg(test)]
impl Script {
    fn next(&mut self, total: usize) -> usize {
        // A prefix index past the candidates (a replay that diverged) is
        // clamped; the driver sees the divergence in the log.
        let chosen = self.prefix.get(self.log.len()).copied().unwrap_or(0).min(total - 1);
        self.log.push((chosen, total));
        chosen
    }
}

/// splitmix64: spreads nearby seeds (1, 2, 3, ...) over the whole state.
fn mix(seed: u64) -> u64 {
    let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Strategy {
    pub(crate) fn new(spec: Spec) -> Strategy {
        let mut rng = Rand64::new(u128::from(mix(spec.seed)) << 64 | u128::from(spec.seed));
        let (pct, on_thread, for_thread) = match spec.policy {
            Policy::Random => (None, Pool::Unordered(Vec::new()), Pool::Unordered(Vec::new())),
            Policy::Pct { depth, steps } => {
                let points = u64::from(depth - 1).min(steps);
                let mut change_points: Vec<(u64, u64)> = Vec::with_capacity(points as usize);
                while (change_points.len() as u64) < points {
                    let step = rng.rand_range(1..steps + 1);
                    if !change_points.iter().any(|&(s, _)| s == step) {
                        // The i-th point drawn lowers to priority i.
                        change_points.push((step, change_points.len() as u64 + 1));
                    }
                }
                change_points.sort_unstable();
                let pct = Pct { keys: HashMap::new(), change_points, min_key: u64::from(depth) };
                (Some(pct), Pool::ByPriority(BinaryHeap::new()), Pool::ByPriority(BinaryHeap::new()))
            }
        };
        Strategy {
            rng,
            pct,
            on_thread,
            for_thread,
            next_strand: 0,
            steps: 0,
            #[cfg(test)]
            script: None,
        }
    }

    /// Test-only: a strategy that follows `prefix` (see [`Script`]).
    #[cfg(test)]
    pub(super) fn scripted(prefix: Vec<usize>) -> Strategy {
        let mut strategy = Strategy::new(Spec { seed: 0, policy: Policy::Random });
        strategy.script = Some(Script { prefix, log: Vec::new() });
        strategy
    }

    /// A new strand, with its priority under PCT.
    pub(super) fn new_strand(&mut self) -> Strand {
        let strand = Strand(self.next_strand);
        self.next_strand += 1;
        if let Some(pct) = &mut self.pct {
            let key = self.rng.rand_range(pct.min_key..u64::MAX);
            pct.keys.insert(strand, key);
        }
        strand
    }

    /// Forgets a strand that ended.
    pub(super) fn retire(&mut self, strand: Strand) {
        if let Some(pct) = &mut self.pct {
            pct.keys.remove(&strand);
        }
    }

    /// Puts a ready strand in the ready set.
    pub(crate) fn push(&mut self, strand: Strand, waiting: Waiting) {
        let key = self.key(strand);
        let pool = match waiting {
            Waiting::OnThread => &mut self.on_thread,
            Waiting::ForThread => &mut self.for_thread,
        };
        match pool {
            Pool::Unordered(v) => v.push(strand),
            Pool::ByPriority(h) => h.push((key, Reverse(strand))),
        }
    }

    fn key(&self, strand: Strand) -> u64 {
        self.pct.as_ref().and_then(|p| p.keys.get(&strand).copied()).unwrap_or(0)
    }

    /// Ready strands that wait for a worker thread.
    pub(super) fn ready_for_thread(&self) -> usize {
        self.for_thread.len()
    }

    /// Decisions made so far between two or more candidates.
    pub(crate) fn steps(&self) -> u64 {
        self.steps
    }

    /// Chooses what runs next among `current` (the strand that ran, when
    /// it can go on), the ready strands with a thread, and, if
    /// `tasks_can_start`, the ready tasks without one. `last` is the strand
    /// that ran (PCT lowers it at a change point), runnable or not.
    pub(super) fn choose(&mut self, current: Option<Strand>, last: Option<Strand>, tasks_can_start: bool) -> Choice {
        let n_current = usize::from(current.is_some());
        let n_on = self.on_thread.len();
        let n_for = if tasks_can_start { self.for_thread.len() } else { 0 };
        let total = n_current + n_on + n_for;
        if total == 0 {
            return Choice::Nothing;
        }
        if total > 1 {
            self.steps += 1;
            if let (Some(pct), Some(last)) = (&mut self.pct, last) {
                if let Ok(i) = pct.change_points.binary_search_by_key(&self.steps, |&(s, _)| s) {
                    let lowered = pct.change_points[i].1;
                    if let Some(key) = pct.keys.get_mut(&last) {
                        *key = lowered;
                    }
                }
            }
        } else if n_current == 1 {
            return Choice::Current;
        }
        if self.pct.is_some() {
            return self.highest(current, tasks_can_start);
        }
        #[cfg(test)]
        if let Some(script) = &mut self.script {
            let r = if total > 1 { script.next(total) } else { 0 };
            return self.pick(r, n_current, n_on);
        }
        let r = self.rng.rand_range(0..total as u64) as usize;
        self.pick(r, n_current, n_on)
    }

    /// Candidate number `r` in the order: the current strand, the ready
    /// strands with a thread, the ready tasks without one.
    fn pick(&mut self, mut r: usize, n_current: usize, n_on: usize) -> Choice {
        if r < n_current {
            return Choice::Current;
        }
        r -= n_current;
        let (pool, waiting) = if r < n_on {
            (&mut self.on_thread, Waiting::OnThread)
        } else {
            r -= n_on;
            (&mut self.for_thread, Waiting::ForThread)
        };
        match pool {
            Pool::Unordered(v) => Choice::Ready(v.swap_remove(r), waiting),
            Pool::ByPriority(_) => unreachable!("the random strategy keeps unordered pools"),
        }
    }

    /// PCT: the candidate of highest priority.
    fn highest(&mut self, current: Option<Strand>, tasks_can_start: bool) -> Choice {
        let current = current.map(|s| (self.key(s), Reverse(s)));
        let on = self.on_thread.top();
        let for_ = if tasks_can_start { self.for_thread.top() } else { None };
        let best = [current, on, for_].into_iter().flatten().max();
        let pop = |pool: &mut Pool| match pool {
            Pool::ByPriority(h) => h.pop().map(|(_, Reverse(s))| s),
            Pool::Unordered(_) => None,
        };
        match best {
            None => Choice::Nothing,
            Some(b) if Some(b) == current => Choice::Current,
            Some(b) if Some(b) == on => Choice::Ready(pop(&mut self.on_thread).expect("peeked"), Waiting::OnThread),
            Some(_) => Choice::Ready(pop(&mut self.for_thread).expect("peeked"), Waiting::ForThread),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn random(seed: u64) -> Strategy {
        Strategy::new(Spec { seed, policy: Policy::Random })
    }

    fn pct(seed: u64, depth: u32, steps: u64) -> Strategy {
        Strategy::new(Spec { seed, policy: Policy::Pct { depth, steps } })
    }

    /// A small simulated program: strand 0 (a program thread) runs and
    /// makes tasks ready; each decision's outcome is logged. The same
    /// strategy state and the same calls must give the same log.
    fn simulate(mut s: Strategy, rounds: usize) -> Vec<Choice> {
        let main = s.new_strand();
        let mut current = Some(main);
        let mut log = Vec::new();
        for i in 0..rounds {
            if i % 3 == 0 {
                let t = s.new_strand();
                s.push(t, Waiting::ForThread);
            }
            let choice = s.choose(current, current, i % 5 != 4);
            log.push(choice);
            match choice {
                Choice::Current => {}
                Choice::Ready(strand, _) => {
                    if let Some(c) = current {
                        s.push(c, Waiting::OnThread);
                    }
                    current = Some(strand);
                }
                Choice::Nothing => current = None,
            }
            if i % 7 == 6 {
                // The running strand ends.
                if let Some(c) = current.take() {
                    s.retire(c);
                }
            }
        }
        log
    }

    #[test]
    fn one_seed_gives_one_sequence_of_choices() {
        for make in [random as fn(u64) -> Strategy, |seed| pct(seed, 3, 40)] {
            assert_eq!(simulate(make(5), 200), simulate(make(5), 200));
            assert_ne!(simulate(make(5), 200), simulate(make(6), 200), "another seed, another schedule");
        }
    }

    #[test]
    fn random_choice_reaches_every_candidate_about_equally() {
        let mut counts = [0u32; 4];
        for seed in 0..4000 {
            let mut s = random(seed);
            let strands: Vec<Strand> = (0..4).map(|_| s.new_strand()).collect();
            for &t in &strands[1..] {
                s.push(t, Waiting::ForThread);
            }
            let picked = match s.choose(Some(strands[0]), Some(strands[0]), true) {
                Choice::Current => 0,
                Choice::Ready(t, _) => t.0 as usize,
                Choice::Nothing => panic!("four candidates"),
            };
            counts[picked] += 1;
        }
        for c in counts {
            assert!((850..1150).contains(&c), "{counts:?}");
        }
    }

    #[test]
    fn tasks_without_a_thread_are_not_candidates_when_none_can_start() {
        let mut s = random(1);
        let t = s.new_strand();
        s.push(t, Waiting::ForThread);
        assert_eq!(s.choose(None, None, false), Choice::Nothing);
        assert_eq!(s.choose(None, None, true), Choice::Ready(t, Waiting::ForThread));
        assert_eq!(s.ready_for_thread(), 0);
    }

    #[test]
    fn a_lone_candidate_is_no_step() {
        let mut s = pct(3, 2, 1);
        let a = s.new_strand();
        assert_eq!(s.choose(Some(a), Some(a), true), Choice::Current);
        assert_eq!(s.steps(), 0);
    }

    #[test]
    fn pct_without_change_points_runs_strands_in_priority_order() {
        for seed in 0..50 {
            let mut s = pct(seed, 1, 10);
            let strands: Vec<Strand> = (0..6).map(|_| s.new_strand()).collect();
            for &t in &strands {
                s.push(t, Waiting::OnThread);
            }
            let mut order = Vec::new();
            while let Choice::Ready(t, _) = s.choose(None, None, true) {
                order.push(t);
            }
            assert_eq!(order.len(), 6);
            let keys: Vec<u64> = order.iter().map(|&t| s.key(t)).collect();
            assert!(keys.windows(2).all(|w| w[0] >= w[1]), "seed {seed}: {keys:?}");
            // With nothing lowered, the highest strand that runs goes on
            // against every other.
            let mut s2 = pct(seed, 1, 10);
            let strands: Vec<Strand> = (0..6).map(|_| s2.new_strand()).collect();
            let top = order[0];
            for &t in strands.iter().filter(|&&t| t != top) {
                s2.push(t, Waiting::ForThread);
            }
            assert_eq!(s2.choose(Some(top), Some(top), true), Choice::Current, "seed {seed}");
        }
    }

    #[test]
    fn pct_priorities_are_a_random_order() {
        // Over seeds, each of three strands is first about a third of the time.
        let mut first = [0u32; 3];
        for seed in 0..3000 {
            let mut s = pct(seed, 1, 10);
            for _ in 0..3 {
                let t = s.new_strand();
                s.push(t, Waiting::OnThread);
            }
            if let Choice::Ready(t, _) = s.choose(None, None, true) {
                first[t.0 as usize] += 1;
            }
        }
        for c in first {
            assert!((850..1150).contains(&c), "{first:?}");
        }
    }

    #[test]
    fn pct_change_point_lowers_the_strand_that_ran() {
        // depth 2 over 1 step: the one change point is step 1, so the
        // strand that ran is lowered there, whatever its priority: the
        // other candidate runs, for every seed.
        for seed in 0..100 {
            let mut s = pct(seed, 2, 1);
            let a = s.new_strand();
            let b = s.new_strand();
            s.push(b, Waiting::OnThread);
            assert_eq!(s.choose(Some(a), Some(a), true), Choice::Ready(b, Waiting::OnThread), "seed {seed}");
            assert_eq!(s.key(a), 1, "lowered to the first change priority");
            // b now runs and a waits: b keeps running against a.
            s.push(a, Waiting::OnThread);
            assert_eq!(s.choose(Some(b), Some(b), true), Choice::Current);
            assert_eq!(s.steps(), 2);
        }
    }

    #[test]
    fn pct_draws_depth_minus_one_distinct_change_points_within_the_steps() {
        for seed in 0..100 {
            let s = pct(seed, 5, 20);
            let points = &s.pct.as_ref().unwrap().change_points;
            assert_eq!(points.len(), 4);
            assert!(points.windows(2).all(|w| w[0].0 < w[1].0), "{points:?}");
            assert!(points.iter().all(|&(step, key)| (1..=20).contains(&step) && (1..=4).contains(&key)));
            let mut keys: Vec<u64> = points.iter().map(|p| p.1).collect();
            keys.sort_unstable();
            assert_eq!(keys, vec![1, 2, 3, 4]);
        }
        // Fewer steps than points: every step is one.
        let s = pct(1, 10, 3);
        assert_eq!(s.pct.as_ref().unwrap().change_points.iter().map(|p| p.0).collect::<Vec<_>>(), vec![1, 2, 3]);
    }

    #[test]
    fn pct_finds_a_depth_two_ordering_bug_at_its_bound() {
        // Two strands of k steps each; the "bug" needs B's first step to
        // run after A's first and before A's last: depth 2. PCT guarantees
        // a chance of at least 1 / (n * k) per run.
        let k = 10u64;
        let runs = 4000;
        let mut found = 0;
        for seed in 0..runs {
            let mut s = pct(seed, 2, 2 * k);
            let a = s.new_strand();
            let b = s.new_strand();
            let (mut done_a, mut done_b) = (0u64, 0u64);
            let mut current = None;
            s.push(a, Waiting::OnThread);
            s.push(b, Waiting::OnThread);
            let mut bug = false;
            while done_a < k || done_b < k {
                let choice = s.choose(current, current, true);
                let runs_now = match choice {
                    Choice::Current => current.unwrap(),
                    Choice::Ready(t, _) => {
                        if let Some(c) = current {
                            s.push(c, Waiting::OnThread);
                        }
                        t
                    }
                    Choice::Nothing => unreachable!(),
                };
                current = Some(runs_now);
                if runs_now == a {
                    done_a += 1;
                } else {
                    if done_b == 0 && done_a >= 1 && done_a < k {
                        bug = true;
                    }
                    done_b += 1;
                }
                let finished = if runs_now == a { done_a == k } else { done_b == k };
                if finished {
                    s.retire(runs_now);
                    current = None;
                }
            }
            found += u32::from(bug);
        }
        let bound = runs as f64 / (2.0 * (2 * k) as f64);
        assert!(f64::from(found) >= bound, "found in {found} of {runs} runs; PCT's bound is {bound}");
    }
}
