//! Bands: a frame's partitions split into contiguous groups, one group per job, so that
//! separate processes (on separate machines) render parts of one frame that merge into
//! exactly the image one process renders. Partitions share nothing, so a band is simply
//! the machine running some of its cores.

use std::ops::Range;

/// Band `index` of `count` (`--band K/N`, K from 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Band {
    pub index: u32,
    pub count: u32,
}

impl Band {
    /// The partitions (emulated cores) of this band when the frame has `partitions`:
    /// contiguous groups as even as possible, the first groups taking one more. An error
    /// when there are fewer partitions than bands or the index is out of range.
    pub fn cores(self, partitions: usize) -> Result<Range<usize>, String> {
        let count = self.count as usize;
        let index = self.index as usize;
        if count == 0 || index >= count {
            return Err(format!(
                "band {}/{}: the band must be below the count (K/N with 0 <= K < N)",
                self.index, self.count
            ));
        }
        if partitions < count {
            return Err(format!(
                "band {}/{}: the frame has only {partitions} partitions (emulated cores) to \
                 split into {count} bands; give --cores {count} or more",
                self.index, self.count
            ));
        }
        let (base, extra) = (partitions / count, partitions % count);
        let start = index * base + index.min(extra);
        Ok(start..start + base + usize::from(index < extra))
    }
}

impl std::fmt::Display for Band {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl std::str::FromStr for Band {
    type Err = String;

    /// `K/N` with 0 <= K < N.
    fn from_str(text: &str) -> Result<Band, String> {
        let expected = || format!("expected K/N (band K of N, 0 <= K < N), found `{text}`");
        let (index, count) = text.split_once('/').ok_or_else(expected)?;
        let band = Band {
            index: index.trim().parse().map_err(|_| expected())?,
            count: count.trim().parse().map_err(|_| expected())?,
        };
        if band.index >= band.count {
            return Err(expected());
        }
        Ok(band)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bands_split_the_cores_into_contiguous_even_groups() {
        let groups: Vec<_> = (0..3)
            .map(|index| Band { index, count: 3 }.cores(8).unwrap())
            .collect();
        assert_eq!(groups, vec![0..3, 3..6, 6..8]);
        assert_eq!(Band { index: 3, count: 4 }.cores(4), Ok(3..4));
        assert!(Band { index: 0, count: 5 }
            .cores(4)
            .unwrap_err()
            .contains("only 4 partitions"));
    }

    #[test]
    fn bands_parse_as_k_of_n() {
        assert_eq!("1/4".parse(), Ok(Band { index: 1, count: 4 }));
        assert!("4/4".parse::<Band>().is_err());
        assert!("1".parse::<Band>().is_err());
        assert!("a/4".parse::<Band>().is_err());
        assert_eq!(
            Band {
                index: 2,
                count: 16
            }
            .to_string(),
            "2/16"
        );
    }
}
