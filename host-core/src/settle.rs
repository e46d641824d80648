//! The settle-wait after a view call that moves the surface (reference-behaviour J6).
//!
//! Rule: yield one task at a time; done when at least [`SettlePolicy::min_ticks`] ticks
//! have passed, the `until` predicate (if any) holds after the yield, and no surface event
//! arrived during that tick ("quiet is not done": the floor covers silent data changes);
//! otherwise give up at the ceiling (250 ms, or 1500 ms with `until`).

use futures_util::future::LocalBoxFuture;
use std::cell::Cell;
use std::rc::Rc;

/// Milliseconds since some fixed origin (`performance.now()` in the browser).
pub trait Clock {
    fn now_ms(&self) -> f64;
}

/// Yields one macrotask (a `MessageChannel` round trip in the browser).
pub trait TaskYield {
    fn yield_task(&self) -> LocalBoxFuture<'static, ()>;
}

/// Reports whether a surface event arrived since the last call, clearing the mark.
pub trait ChangeSource {
    fn take_changed(&self) -> bool;
}

/// A change mark that surface listeners set and the settle-wait clears.
#[derive(Debug, Clone, Default)]
pub struct ChangeFlag(Rc<Cell<bool>>);

impl ChangeFlag {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn mark(&self) {
        self.0.set(true);
    }
}

impl ChangeSource for ChangeFlag {
    fn take_changed(&self) -> bool {
        self.0.replace(false)
    }
}

/// The constants of J6.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SettlePolicy {
    pub min_ticks: u32,
    pub budget_ms: f64,
    pub until_budget_ms: f64,
}

impl Default for SettlePolicy {
    fn default() -> Self {
        Self {
            min_ticks: 2,
            budget_ms: 250.0,
            until_budget_ms: 1500.0,
        }
    }
}

/// How a settle-wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SettleOutcome {
    /// Quiet for a whole tick after the floor, with `until` holding.
    Settled { ticks: u32 },
    /// The ceiling was reached first.
    CeilingReached { ticks: u32 },
}

/// What the driver does after a tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SettleStep {
    YieldAgain,
    Done(SettleOutcome),
}

/// The settle-wait as a pure state machine: the caller yields a task, then reports the tick.
#[derive(Debug, Clone)]
pub struct SettleMachine {
    policy: SettlePolicy,
    started_ms: f64,
    ceiling_ms: f64,
    ticks: u32,
}

impl SettleMachine {
    /// Starts a wait at `now_ms`; `has_until` selects the larger ceiling.
    pub fn new(policy: SettlePolicy, now_ms: f64, has_until: bool) -> Self {
        let ceiling_ms = if has_until {
            policy.until_budget_ms
        } else {
            policy.budget_ms
        };
        Self {
            policy,
            started_ms: now_ms,
            ceiling_ms,
            ticks: 0,
        }
    }

    /// Records one yielded tick: whether an event arrived during it and whether `until` holds.
    pub fn after_tick(&mut self, now_ms: f64, changed: bool, until_holds: bool) -> SettleStep {
        self.ticks += 1;
        if until_holds && self.ticks >= self.policy.min_ticks && !changed {
            SettleStep::Done(SettleOutcome::Settled { ticks: self.ticks })
        } else if now_ms - self.started_ms >= self.ceiling_ms {
            SettleStep::Done(SettleOutcome::CeilingReached { ticks: self.ticks })
        } else {
            SettleStep::YieldAgain
        }
    }
}

/// A settle-wait in progress over its clock and change mark; the caller yields a task
/// between ticks. The step loop drives it in its own body rather than awaiting a nested
/// `settle` future (the crate's size rule); [`settle`] drives it over a [`TaskYield`].
pub struct SettleWait<'a> {
    machine: SettleMachine,
    clock: &'a dyn Clock,
    changes: &'a dyn ChangeSource,
}

impl<'a> SettleWait<'a> {
    /// Starts a wait now: an event from before it is forgotten.
    pub fn start(
        policy: SettlePolicy,
        clock: &'a dyn Clock,
        changes: &'a dyn ChangeSource,
        has_until: bool,
    ) -> Self {
        changes.take_changed();
        Self {
            machine: SettleMachine::new(policy, clock.now_ms(), has_until),
            clock,
            changes,
        }
    }

    /// After a yielded task, with `until` evaluated after it: the outcome, or `None` to yield
    /// again. Taking the change mark clears it for the next tick.
    pub fn tick(&mut self, until_holds: bool) -> Option<SettleOutcome> {
        let changed = self.changes.take_changed();
        match self
            .machine
            .after_tick(self.clock.now_ms(), changed, until_holds)
        {
            SettleStep::Done(outcome) => Some(outcome),
            SettleStep::YieldAgain => None,
        }
    }
}

/// Runs the settle-wait: clear the change mark, yield a task, evaluate `until`, decide.
pub async fn settle(
    policy: SettlePolicy,
    clock: &dyn Clock,
    yielder: &dyn TaskYield,
    changes: &dyn ChangeSource,
    until: Option<&dyn Fn() -> bool>,
) -> SettleOutcome {
    let mut wait = SettleWait::start(policy, clock, changes, until.is_some());
    loop {
        yielder.yield_task().await;
        if let Some(outcome) = wait.tick(until.is_none_or(|until| until())) {
            return outcome;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::FutureExt;
    use std::cell::RefCell;

    /// A fake browser: each yield advances time and may fire a scripted surface event.
    struct FakeTasks {
        now: Rc<Cell<f64>>,
        tick_ms: f64,
        changes: ChangeFlag,
        /// Ticks (1-based) during which a surface event fires.
        events_on: Vec<u32>,
        ticks: Cell<u32>,
    }

    impl Clock for FakeTasks {
        fn now_ms(&self) -> f64 {
            self.now.get()
        }
    }

    impl TaskYield for FakeTasks {
        fn yield_task(&self) -> LocalBoxFuture<'static, ()> {
            let tick = self.ticks.get() + 1;
            self.ticks.set(tick);
            self.now.set(self.now.get() + self.tick_ms);
            if self.events_on.contains(&tick) || self.events_on.contains(&0) {
                self.changes.mark();
            }
            async {}.boxed_local()
        }
    }

    fn fake(tick_ms: f64, events_on: Vec<u32>) -> FakeTasks {
        FakeTasks {
            now: Rc::new(Cell::new(1000.0)),
            tick_ms,
            changes: ChangeFlag::new(),
            events_on,
            ticks: Cell::new(0),
        }
    }

    fn run(tasks: &FakeTasks, until: Option<&dyn Fn() -> bool>) -> SettleOutcome {
        settle(SettlePolicy::default(), tasks, tasks, &tasks.changes, until)
            .now_or_never()
            .expect("fake yields are immediate")
    }

    #[test]
    fn a_quiet_surface_settles_at_the_floor_of_two_ticks() {
        let tasks = fake(0.4, vec![]);
        assert_eq!(run(&tasks, None), SettleOutcome::Settled { ticks: 2 });
    }

    #[test]
    fn an_event_during_a_tick_needs_a_further_quiet_tick() {
        let tasks = fake(0.4, vec![2, 3]);
        assert_eq!(run(&tasks, None), SettleOutcome::Settled { ticks: 4 });
        let tasks = fake(0.4, vec![1]);
        assert_eq!(run(&tasks, None), SettleOutcome::Settled { ticks: 2 });
    }

    #[test]
    fn an_event_before_the_wait_starts_is_forgotten() {
        let tasks = fake(0.4, vec![]);
        tasks.changes.mark();
        assert_eq!(run(&tasks, None), SettleOutcome::Settled { ticks: 2 });
    }

    #[test]
    fn a_surface_that_never_quiets_stops_at_250_ms() {
        let tasks = fake(10.0, vec![0]);
        assert_eq!(
            run(&tasks, None),
            SettleOutcome::CeilingReached { ticks: 25 }
        );
        assert_eq!(tasks.now.get(), 1250.0);
    }

    #[test]
    fn until_must_hold_and_raises_the_ceiling_to_1500_ms() {
        let tasks = fake(10.0, vec![]);
        let calls = RefCell::new(0);
        let until = || {
            *calls.borrow_mut() += 1;
            *calls.borrow() >= 5
        };
        assert_eq!(
            run(&tasks, Some(&until)),
            SettleOutcome::Settled { ticks: 5 }
        );
        let tasks = fake(10.0, vec![]);
        assert_eq!(
            run(&tasks, Some(&|| false)),
            SettleOutcome::CeilingReached { ticks: 150 }
        );
        assert_eq!(tasks.now.get(), 2500.0);
    }

    #[test]
    fn the_machine_checks_quiet_before_the_ceiling() {
        let mut machine = SettleMachine::new(SettlePolicy::default(), 0.0, false);
        assert_eq!(
            machine.after_tick(100.0, false, true),
            SettleStep::YieldAgain
        );
        assert_eq!(
            machine.after_tick(300.0, false, true),
            SettleStep::Done(SettleOutcome::Settled { ticks: 2 })
        );
        let mut machine = SettleMachine::new(SettlePolicy::default(), 0.0, true);
        assert_eq!(
            machine.after_tick(249.0, true, true),
            SettleStep::YieldAgain
        );
        assert_eq!(
            machine.after_tick(1499.0, true, true),
            SettleStep::YieldAgain
        );
        assert_eq!(
            machine.after_tick(1500.0, true, true),
            SettleStep::Done(SettleOutcome::CeilingReached { ticks: 3 })
        );
    }
}
