//! The run's span cut into equal windows ([`Grid`]), the nearest-window
//! lookup ([`Near`]) and a per-window sum ([`Strip`]).

/// The run's span, `[t0, t0 + span]` in ticks, cut into `n` equal windows
/// (the last tick belongs to the last window).
#[derive(Clone, Debug)]
pub(crate) struct Grid {
    pub t0: u64,
    pub span: u64,
    pub n: usize,
    /// Where each window starts, and the grid's end: `n + 1` entries
    /// (the passes split a few spans per period; a table lookup is much
    /// cheaper than the division that defines a start).
    starts: Vec<u64>,
    /// `n / span`, to guess a window from a time.
    scale: f64,
}

impl Grid {
    pub fn new(t0: u64, t1: u64, n: usize) -> Self {
        let span = t1.saturating_sub(t0);
        let n = n.max(1);
        Grid {
            t0,
            span,
            n,
            starts: (0..=n as u64)
                .map(|i| t0 + mul_div(span, i, n as u64))
                .collect(),
            scale: if span == 0 {
                0.0
            } else {
                n as f64 / span as f64
            },
        }
    }

    /// The window holding `t` (clamped to the grid).
    #[inline]
    pub fn index(&self, t: u64) -> usize {
        if self.n == 1 || self.span == 0 {
            return 0;
        }
        let d = t.saturating_sub(self.t0).min(self.span);
        // A guess, then the table's word.
        let mut i = ((d as f64 * self.scale) as usize).min(self.n - 1);
        let t = self.t0 + d;
        while i > 0 && self.starts[i] > t {
            i -= 1;
        }
        while i + 1 < self.n && self.starts[i + 1] <= t {
            i += 1;
        }
        i
    }

    /// Where window `i` starts (`i == n`: the grid's end).
    pub fn start(&self, i: usize) -> u64 {
        self.starts[i.min(self.n)]
    }

    /// The length of window `i`, ticks.
    pub fn len(&self, i: usize) -> u64 {
        self.start(i + 1) - self.start(i)
    }

    /// Hands `f` the overlap (ticks) of `[a, b)` with each window it meets,
    /// in window order.
    #[inline]
    pub fn split(&self, a: u64, b: u64, mut f: impl FnMut(usize, u64)) {
        let end = self.t0 + self.span;
        let (a, b) = (a.clamp(self.t0, end), b.clamp(self.t0, end));
        if b <= a {
            return;
        }
        let (mut w, mut lo) = (self.index(a), a);
        loop {
            let hi = if w + 1 >= self.n {
                b
            } else {
                self.starts[w + 1].min(b)
            };
            if hi > lo {
                f(w, hi - lo);
            }
            if hi >= b {
                break;
            }
            (w, lo) = (w + 1, hi);
        }
    }
}

/// The window a pass touched last, remembered between calls to
/// [`Grid::split_near`]: a pass over periods in time order puts most spans
/// inside the window of the one before, and two compares then replace the
/// search.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Near {
    lo: u64,
    hi: u64,
    pub i: usize,
}

impl Near {
    /// Window `i`, `[lo, hi)`.
    pub fn new(lo: u64, hi: u64, i: usize) -> Self {
        Near { lo, hi, i }
    }

    /// Whether `[a, b)` lies inside the window.
    #[inline]
    pub fn holds(&self, a: u64, b: u64) -> bool {
        a >= self.lo && b <= self.hi
    }

    /// Where the window ends.
    #[inline]
    pub fn hi(&self) -> u64 {
        self.hi
    }

    /// Hands `f` the overlaps of `[a, b)` with a grid's windows: the span
    /// whole where it lies in this window, else through `split` (the
    /// grid's), after which this becomes the last window the span met
    /// (`bounds` gives a window's `[lo, hi)`).
    #[inline]
    pub fn split(
        &mut self,
        a: u64,
        b: u64,
        mut f: impl FnMut(usize, u64),
        split: impl FnOnce(&mut dyn FnMut(usize, u64)),
        bounds: impl FnOnce(usize) -> (u64, u64),
    ) {
        if self.holds(a, b) {
            if b > a {
                f(self.i, b - a);
            }
            return;
        }
        let mut last = None;
        split(&mut |w, t| {
            last = Some(w);
            f(w, t)
        });
        if let Some(w) = last {
            let (lo, hi) = bounds(w);
            *self = Near::new(lo, hi, w);
        }
    }
}

impl Default for Near {
    fn default() -> Self {
        // An empty window: no span fits it.
        Near { lo: 1, hi: 0, i: 0 }
    }
}

impl Grid {
    /// [`split`](Self::split), with `near` the window met last: a span
    /// inside it is handed over whole, with no search; otherwise the span is
    /// split and `near` becomes the last window it met.
    #[inline]
    pub fn split_near(&self, near: &mut Near, a: u64, b: u64, f: impl FnMut(usize, u64)) {
        near.split(
            a,
            b,
            f,
            |g| self.split(a, b, g),
            |w| (self.starts[w], self.starts[w + 1]),
        );
    }
}

/// `x · y / z` rounded down (`z > 0`, a result below 2^64): in 64 bits
/// where the product fits (a 128-bit division costs several
/// times more, and the passes divide a few times per period).
#[inline]
fn mul_div(x: u64, y: u64, z: u64) -> u64 {
    match x.checked_mul(y) {
        Some(p) => p / z,
        None => (u128::from(x) * u128::from(y) / u128::from(z)) as u64,
    }
}

/// Ticks per window over the windows something touched (a dense run of
/// windows, grown on demand: a short-lived task costs one or two entries).
#[derive(Clone, Debug)]
pub(crate) struct Strip {
    first: usize,
    v: Vec<u64>,
    /// The window of the last addition (spans tend to fall in it again).
    last: usize,
    /// Its bounds `[lo, hi]` where [`add_span`](Self::add_span) made it,
    /// else an empty range (`lo > hi`).
    lo: u64,
    hi: u64,
}

impl Default for Strip {
    fn default() -> Self {
        Strip {
            first: 0,
            v: Vec::new(),
            last: 0,
            lo: 1,
            hi: 0,
        }
    }
}

impl Strip {
    pub fn add(&mut self, w: usize, ticks: u64) {
        (self.lo, self.hi) = (1, 0);
        if self.v.is_empty() {
            self.first = w;
        } else if w < self.first {
            let k = self.first - w;
            self.v.splice(0..0, std::iter::repeat_n(0, k));
            self.first = w;
        }
        let i = w - self.first;
        if i >= self.v.len() {
            self.v.resize(i + 1, 0);
        }
        self.v[i] = self.v[i].saturating_add(ticks);
        self.last = w;
    }

    /// Adds `[a, b)` split over `grid`'s windows.
    #[inline]
    pub fn add_span(&mut self, grid: &Grid, a: u64, b: u64) {
        // Within the window of the last addition (inside the grid, so the
        // split would clamp nothing): no search. (`lo <= hi` only while
        // `v` holds that window; an empty or reversed span adds nothing.)
        if a < b && a >= self.lo && b <= self.hi {
            let v = &mut self.v[self.last - self.first];
            *v = v.saturating_add(b - a);
            return;
        }
        grid.split(a, b, |w, t| self.add(w, t));
        if !self.v.is_empty() {
            (self.lo, self.hi) = (grid.starts[self.last], grid.starts[self.last + 1]);
        }
    }

    pub fn get(&self, w: usize) -> u64 {
        w.checked_sub(self.first)
            .and_then(|i| self.v.get(i))
            .copied()
            .unwrap_or(0)
    }
}
