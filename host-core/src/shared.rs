//! A future several callers await and that runs once: invocation dedupe's join (the same
//! invocation id in flight twice). `futures_util`'s `Shared` does this for any thread, with an
//! `Arc` waker, a `Mutex` and a slab of wakers (3 KB of the browser build); everything here is
//! single-threaded, so an `Rc<RefCell<…>>` does.
//!
//! Whichever clone is polled polls the inner future (so the inner future holds the waker of the
//! latest poll, as `Future::poll` asks), and every clone left pending keeps its waker here. When
//! the future settles, all of them are woken; when a clone is dropped unsettled (perhaps the one
//! whose waker the inner future holds), they are woken too, so that one of them polls again.

use crate::cell::Access;
use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use futures_util::future::LocalBoxFuture;

enum State<T> {
    Running {
        /// `None` while a clone is polling it (a re-entrant poll then waits).
        future: Option<LocalBoxFuture<'static, T>>,
        waiters: Vec<Waker>,
    },
    Done(T),
}

pub(crate) struct LocalShared<T: Clone>(Rc<RefCell<State<T>>>);

impl<T: Clone> Clone for LocalShared<T> {
    fn clone(&self) -> Self {
        Self(Rc::clone(&self.0))
    }
}

impl<T: Clone> LocalShared<T> {
    pub(crate) fn new(future: LocalBoxFuture<'static, T>) -> Self {
        Self(Rc::new(RefCell::new(State::Running {
            future: Some(future),
            waiters: Vec::new(),
        })))
    }
}

fn wake_all(waiters: Vec<Waker>) {
    for waker in waiters {
        waker.wake();
    }
}

impl<T: Clone> Future for LocalShared<T> {
    type Output = T;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        let mut future = match &mut *self.0.get_mut_ref() {
            State::Done(value) => return Poll::Ready(value.clone()),
            State::Running { future, waiters } => match future.take() {
                Some(future) => future,
                None => {
                    waiters.push(cx.waker().clone());
                    return Poll::Pending;
                }
            },
        };
        // Polled with no borrow held: the inner future may reach this same state.
        let polled = future.as_mut().poll(cx);
        let mut state = self.0.get_mut_ref();
        match polled {
            Poll::Ready(value) => {
                let previous = std::mem::replace(&mut *state, State::Done(value.clone()));
                drop(state);
                if let State::Running { waiters, .. } = previous {
                    wake_all(waiters);
                }
                Poll::Ready(value)
            }
            Poll::Pending => {
                if let State::Running {
                    future: slot,
                    waiters,
                } = &mut *state
                {
                    *slot = Some(future);
                    if !waiters.iter().any(|w| w.will_wake(cx.waker())) {
                        waiters.push(cx.waker().clone());
                    }
                }
                Poll::Pending
            }
        }
    }
}

impl<T: Clone> Drop for LocalShared<T> {
    fn drop(&mut self) {
        // Dropped unsettled: the inner future may hold this clone's waker, so the others poll
        // again and one of them takes over. (Dropped from inside the inner future's poll, the
        // future is out of the state and its poller is still there: nothing to do.)
        let Ok(mut state) = self.0.try_borrow_mut() else {
            return;
        };
        if let State::Running {
            future: Some(_),
            waiters,
        } = &mut *state
        {
            let waiters = std::mem::take(waiters);
            drop(state);
            wake_all(waiters);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::FutureExt;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::task::Wake;

    struct Count(AtomicUsize);
    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    fn counter() -> (Arc<Count>, Waker) {
        let count = Arc::new(Count(AtomicUsize::new(0)));
        (Arc::clone(&count), Waker::from(count))
    }

    #[test]
    fn clones_join_one_run_and_all_get_its_value() {
        let (tx, rx) = futures_channel::oneshot::channel::<u32>();
        let runs = Rc::new(RefCell::new(0));
        let counted = Rc::clone(&runs);
        let shared = LocalShared::new(
            async move {
                *counted.get_mut_ref() += 1;
                rx.await.unwrap_or(0)
            }
            .boxed_local(),
        );
        let (mut a, mut b) = (shared.clone(), shared);
        let (a_woken, a_waker) = counter();
        let (b_woken, b_waker) = counter();
        assert!(a
            .poll_unpin(&mut Context::from_waker(&a_waker))
            .is_pending());
        assert!(b
            .poll_unpin(&mut Context::from_waker(&b_waker))
            .is_pending());
        tx.send(7).unwrap();
        assert_eq!(
            b_woken.0.load(Ordering::SeqCst),
            1,
            "the latest poll's waker"
        );
        assert_eq!(a_woken.0.load(Ordering::SeqCst), 0);
        assert_eq!(
            b.poll_unpin(&mut Context::from_waker(&b_waker)),
            Poll::Ready(7)
        );
        assert_eq!(
            a_woken.0.load(Ordering::SeqCst),
            1,
            "every waiter, on settling"
        );
        assert_eq!(
            a.poll_unpin(&mut Context::from_waker(&a_waker)),
            Poll::Ready(7)
        );
        assert_eq!(*runs.get_ref(), 1);
    }

    #[test]
    fn a_waiter_takes_over_when_the_clone_the_future_would_wake_is_dropped() {
        let (tx, rx) = futures_channel::oneshot::channel::<u32>();
        let shared = LocalShared::new(async move { rx.await.unwrap_or(0) }.boxed_local());
        let (mut waiter, mut latest) = (shared.clone(), shared);
        let (woken, waiter_waker) = counter();
        let (_, latest_waker) = counter();
        assert!(waiter
            .poll_unpin(&mut Context::from_waker(&waiter_waker))
            .is_pending());
        assert!(latest
            .poll_unpin(&mut Context::from_waker(&latest_waker))
            .is_pending());
        // The inner future would wake `latest`'s task, which is gone.
        drop(latest);
        assert_eq!(woken.0.load(Ordering::SeqCst), 1);
        assert!(waiter
            .poll_unpin(&mut Context::from_waker(&waiter_waker))
            .is_pending());
        tx.send(3).unwrap();
        assert_eq!(woken.0.load(Ordering::SeqCst), 2);
        assert_eq!(
            waiter.poll_unpin(&mut Context::from_waker(&waiter_waker)),
            Poll::Ready(3)
        );
    }
}
