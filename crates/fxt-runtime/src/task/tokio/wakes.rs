//! Who woke a task of Tokio's hooks: [`wake_layer`].
//!
//! Tokio's task hooks never say who woke a task. Built with
//! `--cfg tokio_unstable` and its `tracing` feature, Tokio reports it to
//! `tracing` instead: each spawned task has a span (target `tokio::task`,
//! name `runtime.spawn`) whose field `task.id` is the task's
//! [`tokio::task::Id`](::tokio::task::Id) (the id the hooks see), and its
//! wakers' operations are events (target `tokio::task::waker`, field `op`:
//! `waker.wake`, `waker.wake_by_ref`, `waker.clone`, `waker.drop`) whose
//! field `task.id` is that span's id.
//!
//! The layer keeps a [`WakeSlot`] in each task span's extensions: a wake
//! stores its time, the waking thread's current task and its koid there,
//! as a traced future's waker does; the task's next poll (Tokio enters the
//! span in it, after the before-poll hook) hands them to the hooks, which
//! write them as the poll's `delay`, `woken_by` and `waker_thread`.
//!
//! Its filter is its own (a per-layer filter): it wants only those spans
//! and events, and those only while the session records category `task`.
//! It says so in the callsites' interest, which `tracing` caches: `never`
//! with the session or the category off, so that Tokio makes no task span
//! and its wakers report nothing (a per-layer filter's `enabled` cannot
//! keep a registry from making a span: only the interest does), and
//! `sometimes` for its own callsites while recording. The session has the
//! cache rebuilt when it starts, stops or changes its categories
//! (`state::on_change`), in each dispatcher the layer is part of: a
//! task spawned before that has no span, as one spawned before the
//! session. [`wake_subscriber`] filters for the whole subscriber
//! (`bench-tokio-wakes` in fxt-bench measures what an installed
//! subscriber still costs).

use std::sync::Mutex;

use tracing_core::dispatcher::{Dispatch, WeakDispatch};
use tracing_core::field::{Field, Visit};
use tracing_core::span::{Attributes, Id};
use tracing_core::subscriber::Interest;
use tracing_core::{Event, Metadata, Subscriber};
use tracing_subscriber::layer::{Context, Filter, Layer};
use tracing_subscriber::registry::LookupSpan;

use super::super::wake::{self, WakeSlot};

/// The target and name of the span of a spawned task.
const SPAWN: (&str, &str) = ("tokio::task", "runtime.spawn");
/// The target of a waker's events.
const WAKER: &str = "tokio::task::waker";

/// A `tracing` layer that gives the polls of [`instrument`](super::instrument)'s
/// tasks who woke them: `woken_by` (the waking task's id, as the hooks
/// write it), `waker_thread` and `delay` from that wake, from which readers
/// draw the arrow. Tokio reports its wakers' wakes to `tracing` (built
/// with `--cfg tokio_unstable` and its feature `tracing`): the layer keeps
/// each task's first wake since its last poll in the task's span, and the
/// next poll takes it.
///
/// Add it to the program's subscriber, or install it alone with
/// [`install_wake_layer`]:
///
/// ```
/// use tracing_subscriber::layer::SubscriberExt;
/// let subscriber = tracing_subscriber::registry().with(fxt_runtime::task::tokio::wake_layer());
/// # drop(subscriber);
/// ```
///
/// It sees the wakes only of a program built with `--cfg tokio_unstable`
/// (and feature `tokio-wakes`, which turns on Tokio's `tracing`).
pub fn wake_layer<S>() -> impl Layer<S>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    Wakes.with_filter(Wakes)
}

/// The subscriber [`install_wake_layer`] installs: [`wake_layer`] alone,
/// filtering for the whole subscriber, so that with the session off Tokio
/// makes no span for a task it spawns and its wakers report nothing (a
/// per-layer filter, which [`wake_layer`] needs to sit beside other
/// layers, leaves the task spans made and their wakers reporting).
pub fn wake_subscriber() -> impl Subscriber + Send + Sync + 'static {
    use tracing_subscriber::layer::SubscriberExt;
    tracing_subscriber::registry().with(Alone)
}

/// Installs [`wake_subscriber`] as the program's only `tracing`
/// subscriber, for a program that has none.
///
/// # Errors
///
/// If the program already has a global subscriber (add [`wake_layer`] to
/// it instead).
pub fn install_wake_layer() -> Result<(), tracing_core::dispatcher::SetGlobalDefaultError> {
    tracing_core::dispatcher::set_global_default(tracing_core::Dispatch::new(wake_subscriber()))
}

/// The dispatchers the layer was made part of (weakly), whose interest
/// caches the session has rebuilt after a change (see the module docs).
static DISPATCHES: Mutex<Vec<WeakDispatch>> = Mutex::new(Vec::new());

/// A dispatcher with the layer in it: remembered, and the session told to
/// call [`rebuild`] after each change.
fn remember(dispatch: &Dispatch) {
    crate::state::on_change(rebuild);
    // A panic elsewhere cannot leave the list half-updated (one push or
    // retain), so a poisoned lock is still a good list.
    let mut all = DISPATCHES.lock().unwrap_or_else(|e| e.into_inner());
    all.retain(|d| d.upgrade().is_some());
    all.push(dispatch.downgrade());
}

/// Has `tracing` ask the layer again about every callsite. In each of its
/// dispatchers as the thread's default: with one dispatcher registered,
/// `tracing` rebuilds the cache for the calling thread's default alone,
/// and the layer's may be another thread's (a runtime's workers').
fn rebuild() {
    let live: Vec<Dispatch> = DISPATCHES
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .filter_map(WeakDispatch::upgrade)
        .collect();
    if live.is_empty() {
        tracing_core::callsite::rebuild_interest_cache();
    }
    for dispatch in &live {
        tracing_core::dispatcher::with_default(
            dispatch,
            tracing_core::callsite::rebuild_interest_cache,
        );
    }
}

/// The layer of [`wake_subscriber`]: [`Wakes`] with its filter applied to
/// the whole subscriber.
struct Alone;

impl<S> Layer<S> for Alone
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_register_dispatch(&self, dispatch: &Dispatch) {
        remember(dispatch);
    }

    fn register_callsite(&self, meta: &'static Metadata<'static>) -> Interest {
        <Wakes as Filter<S>>::callsite_enabled(&Wakes, meta)
    }

    fn enabled(&self, meta: &Metadata<'_>, cx: Context<'_, S>) -> bool {
        <Wakes as Filter<S>>::enabled(&Wakes, meta, &cx)
    }

    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, cx: Context<'_, S>) {
        <Wakes as Layer<S>>::on_new_span(&Wakes, attrs, id, cx);
    }

    fn on_event(&self, event: &Event<'_>, cx: Context<'_, S>) {
        <Wakes as Layer<S>>::on_event(&Wakes, event, cx);
    }

    fn on_enter(&self, id: &Id, cx: Context<'_, S>) {
        <Wakes as Layer<S>>::on_enter(&Wakes, id, cx);
    }
}

/// The layer and its filter.
struct Wakes;

/// What a task's span holds.
struct TaskWakes {
    /// The task's id as the hooks write it.
    id: u64,
    /// Its first wake since its last poll started.
    woken: WakeSlot,
}

fn ours(meta: &Metadata<'_>) -> bool {
    cfg!(tokio_unstable)
        && ((meta.target(), meta.name()) == SPAWN || meta.target() == WAKER && meta.is_event())
}

impl<S> Filter<S> for Wakes {
    fn enabled(&self, meta: &Metadata<'_>, _: &Context<'_, S>) -> bool {
        ours(meta) && super::super::GATE.site().is_some()
    }

    fn callsite_enabled(&self, meta: &'static Metadata<'static>) -> Interest {
        // Sometimes while recording: whether the category still records is
        // asked each time (the cache is rebuilt after a change, not at
        // it). Never otherwise, until the session changes.
        if ours(meta) && super::super::GATE.site().is_some() {
            Interest::sometimes()
        } else {
            Interest::never()
        }
    }
}

/// The fields this layer reads: a span's or event's `task.id`, an
/// event's `op`.
#[derive(Default)]
struct Fields {
    task: u64,
    wake: bool,
}

impl Visit for Fields {
    fn record_u64(&mut self, field: &Field, value: u64) {
        if field.name() == "task.id" {
            self.task = value;
        }
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.record_u64(field, u64::try_from(value).unwrap_or(0));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "op" {
            self.wake = matches!(value, "waker.wake" | "waker.wake_by_ref");
        }
    }

    fn record_debug(&mut self, _: &Field, _: &dyn core::fmt::Debug) {}
}

impl<S> Layer<S> for Wakes
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_register_dispatch(&self, dispatch: &Dispatch) {
        remember(dispatch);
    }

    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, cx: Context<'_, S>) {
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        if let (Some(span), true) = (cx.span(id), fields.task != 0) {
            span.extensions_mut().insert(TaskWakes {
                id: super::task_id(fields.task),
                woken: WakeSlot::default(),
            });
        }
    }

    fn on_event(&self, event: &Event<'_>, cx: Context<'_, S>) {
        let mut fields = Fields::default();
        event.record(&mut fields);
        // A span id is never 0; a span that ended is not found.
        if !fields.wake || fields.task == 0 {
            return;
        }
        if let Some(span) = cx.span(&Id::from_u64(fields.task)) {
            if let Some(task) = span.extensions().get::<TaskWakes>() {
                task.woken.record();
            }
        }
    }

    fn on_enter(&self, id: &Id, cx: Context<'_, S>) {
        let Some(span) = cx.span(id) else { return };
        let extensions = span.extensions();
        // Only the poll of this very task (the hooks made it the thread's
        // current task): the span is entered elsewhere too (its future's
        // drop, a `LocalSet` polled inside another task).
        if let Some(task) = extensions
            .get::<TaskWakes>()
            .filter(|t| t.id == wake::current())
        {
            let (at, by, thread) = task.woken.take();
            if at != 0 {
                super::woken(at, by, thread);
            }
        }
    }
}
