//! Animations from frames: APNG (lossless, every frame a full PNG frame) and GIF (each
//! frame quantised to its own 256-colour palette), looping forever.

use std::borrow::Borrow;

use super::Rgb8;

/// APNG bytes of `frames` (all of one size) at `fps` frames per second.
pub fn apng_bytes(frames: &[Rgb8], fps: u16) -> Result<Vec<u8>, String> {
    let first = check_frames(frames, fps)?;
    let size = (first.width, first.height);
    apng_stream(size, frames.len(), fps, frames.iter().map(Ok))
}

/// GIF bytes of `frames` (all of one size) at `fps` frames per second, as near as GIF's
/// delays in hundredths of a second allow (24 fps plays at 25).
pub fn gif_bytes(frames: &[Rgb8], fps: u16) -> Result<Vec<u8>, String> {
    let first = check_frames(frames, fps)?;
    let size = (first.width, first.height);
    gif_stream(size, fps, frames.iter().map(Ok))
}

/// [`apng_bytes`] of `count` frames of `size` that `frames` yields one at a time (each is
/// encoded and dropped before the next is asked for: memory holds one frame, whatever
/// their number). The first error, or a frame of another size, stops it.
pub fn apng_stream<F: Borrow<Rgb8>>(
    size: (u32, u32),
    count: usize,
    fps: u16,
    frames: impl Iterator<Item = Result<F, String>>,
) -> Result<Vec<u8>, String> {
    if fps == 0 {
        return Err("the frame rate must be at least 1".into());
    }
    let count = u32::try_from(count).map_err(|_| "too many frames".to_string())?;
    let mut bytes = Vec::new();
    let mut encoder = png::Encoder::new(&mut bytes, size.0, size.1);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let error = |e: png::EncodingError| e.to_string();
    encoder.set_animated(count, 0).map_err(error)?;
    encoder.set_frame_delay(1, fps).map_err(error)?;
    let mut writer = encoder.write_header().map_err(error)?;
    for (index, frame) in frames.enumerate() {
        let frame = frame?;
        check_size(index, frame.borrow(), size)?;
        writer
            .write_image_data(&frame.borrow().data)
            .map_err(error)?;
    }
    writer.finish().map_err(error)?;
    Ok(bytes)
}

/// [`gif_bytes`] of the frames of `size` that `frames` yields one at a time, as
/// [`apng_stream`] takes them.
pub fn gif_stream<F: Borrow<Rgb8>>(
    size: (u32, u32),
    fps: u16,
    frames: impl Iterator<Item = Result<F, String>>,
) -> Result<Vec<u8>, String> {
    if fps == 0 {
        return Err("the frame rate must be at least 1".into());
    }
    let side = |v: u32| u16::try_from(v).map_err(|_| format!("{v} pixels is too large for GIF"));
    let (width, height) = (side(size.0)?, side(size.1)?);
    let delay = (100.0 / f64::from(fps)).round().max(1.0) as u16;
    let mut bytes = Vec::new();
    let error = |e: gif::EncodingError| e.to_string();
    {
        let mut encoder = gif::Encoder::new(&mut bytes, width, height, &[]).map_err(error)?;
        encoder.set_repeat(gif::Repeat::Infinite).map_err(error)?;
        for (index, frame) in frames.enumerate() {
            let frame = frame?;
            check_size(index, frame.borrow(), size)?;
            let mut gif_frame = gif::Frame::from_rgb_speed(width, height, &frame.borrow().data, 10);
            gif_frame.delay = delay;
            encoder.write_frame(&gif_frame).map_err(error)?;
        }
    }
    Ok(bytes)
}

fn check_size(index: usize, frame: &Rgb8, (width, height): (u32, u32)) -> Result<(), String> {
    if (frame.width, frame.height) != (width, height) {
        return Err(format!(
            "frame {index} is {}x{} but the first is {width}x{height}",
            frame.width, frame.height
        ));
    }
    Ok(())
}

/// The first frame, once every frame has its size and `fps` is not zero.
fn check_frames(frames: &[Rgb8], fps: u16) -> Result<&Rgb8, String> {
    let first = frames.first().ok_or("no frames")?;
    if fps == 0 {
        return Err("the frame rate must be at least 1".into());
    }
    if let Some((index, frame)) = frames
        .iter()
        .enumerate()
        .find(|(_, f)| (f.width, f.height) != (first.width, first.height))
    {
        return Err(format!(
            "frame {index} is {}x{} but the first is {}x{}",
            frame.width, frame.height, first.width, first.height
        ));
    }
    Ok(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(shade: u8) -> Rgb8 {
        Rgb8 {
            width: 3,
            height: 2,
            data: (0..18).map(|i| i as u8 * shade).collect(),
        }
    }

    #[test]
    fn apng_holds_every_frame_losslessly() {
        let frames = [frame(1), frame(7), frame(13)];
        let bytes = apng_bytes(&frames, 24).unwrap();
        let mut reader = png::Decoder::new(std::io::Cursor::new(&bytes))
            .read_info()
            .unwrap();
        let control = reader.info().animation_control.unwrap();
        assert_eq!((control.num_frames, control.num_plays), (3, 0));
        for expected in &frames {
            let mut data = vec![0; reader.output_buffer_size().unwrap()];
            reader.next_frame(&mut data).unwrap();
            assert_eq!(data, expected.data);
            let control = reader.info().frame_control.unwrap();
            assert_eq!((control.delay_num, control.delay_den), (1, 24));
        }
    }

    #[test]
    fn gif_holds_every_frame_at_the_nearest_delay() {
        let frames = [frame(1), frame(7)];
        let bytes = gif_bytes(&frames, 24).unwrap();
        let mut options = gif::DecodeOptions::new();
        options.set_color_output(gif::ColorOutput::RGBA);
        let mut decoder = options.read_info(std::io::Cursor::new(bytes)).unwrap();
        let mut delays = Vec::new();
        while let Some(frame) = decoder.read_next_frame().unwrap() {
            delays.push(frame.delay);
        }
        assert_eq!(delays, vec![4, 4]);
    }

    #[test]
    fn frames_of_another_size_are_refused() {
        let mut other = frame(1);
        other.width = 2;
        other.data.truncate(12);
        let error = apng_bytes(&[frame(1), other], 24).unwrap_err();
        assert_eq!(error, "frame 1 is 2x2 but the first is 3x2");
        assert!(gif_bytes(&[frame(1)], 0).is_err());
    }
}
