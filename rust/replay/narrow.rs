//! [`Narrow`]: a list of indices or byte offsets kept as `u32`s while they fit.
//!
//! What a load or a history read keeps for each envelope is mostly such numbers, and
//! those of a transcript stay far below 2^32 (10 GB has 5.3 million envelopes): as
//! `usize`s, half of each was zeros. One that does not fit (an offset past 4 GiB into
//! a buffer of ids, say) goes on as a `usize`, with every one after it: no number is
//! ever cut short, whatever the file holds.

/// A list of `usize`s: `u32`s up to the first that does not fit, `usize`s from there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Narrow {
    near: Vec<u32>,
    far: Vec<usize>,
    /// The largest value kept as a `u32` (`u32::MAX`; a test's is smaller).
    near_max: u32,
}

impl Default for Narrow {
    fn default() -> Self {
        Self::with_capacity(0)
    }
}

impl Narrow {
    pub fn new() -> Self {
        Self::with_capacity(0)
    }

    /// Room for `n` values that fit (room not written to is only address space).
    pub fn with_capacity(n: usize) -> Self {
        Narrow {
            near: Vec::with_capacity(n),
            far: Vec::new(),
            near_max: u32::MAX,
        }
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.near.len() + self.far.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    #[inline]
    pub fn push(&mut self, value: usize) {
        match u32::try_from(value) {
            Ok(v) if v <= self.near_max && self.far.is_empty() => self.near.push(v),
            _ => self.far.push(value),
        }
    }

    /// The value at `at`.
    #[inline]
    pub fn get(&self, at: usize) -> Option<usize> {
        match self.near.get(at) {
            Some(&v) => Some(v as usize),
            None => self.far.get(at.checked_sub(self.near.len())?).copied(),
        }
    }

    /// Where `value` is, in a list kept in increasing order.
    pub fn find_sorted(&self, value: usize) -> Option<usize> {
        if let Ok(v) = u32::try_from(value) {
            match self.near.binary_search(&v) {
                Ok(at) => return Some(at),
                // Every far value is larger than every near one.
                Err(at) if at < self.near.len() || v <= self.near_max => return None,
                Err(_) => {}
            }
        }
        let at = self.far.binary_search(&value).ok()?;
        Some(self.near.len() + at)
    }

    /// A list that keeps as `u32`s only values up to `near_max` (a test's, to cross
    /// the switch without 4 GiB of data).
    #[cfg(test)]
    pub(crate) fn with_near_max(near_max: u32) -> Self {
        Narrow {
            near_max,
            ..Self::new()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_that_do_not_fit_a_u32_are_kept_whole_and_so_is_every_one_after() {
        let values = [0, 7, u32::MAX as usize - 1, u32::MAX as usize, 1 << 40, 3];
        let mut list = Narrow::default();
        for (i, &v) in values.iter().enumerate() {
            list.push(v);
            assert_eq!(list.len(), i + 1);
        }
        let back: Vec<usize> = (0..list.len()).filter_map(|at| list.get(at)).collect();
        assert_eq!(back, values);
        assert_eq!((list.near.len(), list.far.len()), (4, 2));
        assert_eq!(list.get(values.len()), None);
    }

    #[test]
    fn a_sorted_list_finds_each_value_on_both_sides_of_the_switch() {
        for near_max in [u32::MAX, 5, 0] {
            let mut list = Narrow::with_near_max(near_max);
            let values: Vec<usize> = (0..20).map(|i| i * 3).collect();
            for &v in &values {
                list.push(v);
            }
            assert_eq!(
                list.near.len(),
                values.iter().filter(|&&v| v <= near_max as usize).count()
            );
            for (at, &v) in values.iter().enumerate() {
                assert_eq!(list.get(at), Some(v));
                assert_eq!(list.find_sorted(v), Some(at), "{v} of {near_max}");
                assert_eq!(list.find_sorted(v + 1), None);
            }
            assert_eq!(list.find_sorted(usize::MAX), None);
        }
    }
}
