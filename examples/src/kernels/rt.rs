//! A small deterministic ray tracer: spheres and planes, point lights with
//! hard shadows, Phong shading, mirror reflections (bounded depth) and a
//! checkerboard floor. Pure `f64` math, no threads, no randomness except the
//! seeded scene generator.
//!
//! Decomposition for a stream network: [`scene`]`(i)` builds scene `i`
//! (cost varies with `i`: 4 to 24 spheres, 1 to 3 lights), [`render_rows`]
//! renders any band of rows of an image, and the bands concatenated in row
//! order are exactly [`render`]'s output. A collector folds finished images
//! into a [`Checksum`] in scene order.

mod math;
mod render;
mod scene;

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

pub use math::{Ray, Vec3};
pub use render::{primary_ray, render_rows};
pub use scene::{scene, sphere_count, Camera, Light, Material, Plane, Scene, Sphere};

/// Default number of scenes of the benchmark.
pub const DEFAULT_SCENES: u32 = 100;
/// Default image width.
pub const DEFAULT_WIDTH: u32 = 160;
/// Default image height.
pub const DEFAULT_HEIGHT: u32 = 120;

/// An RGB8 image, rows top to bottom, 3 bytes per pixel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Image {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// `width · height · 3` bytes.
    pub rgb: Vec<u8>,
}

impl Image {
    /// The RGB value of pixel `(x, y)`.
    ///
    /// # Panics
    /// If the pixel is outside the image.
    pub fn pixel(&self, x: u32, y: u32) -> [u8; 3] {
        assert!(
            x < self.width && y < self.height,
            "pixel ({x}, {y}) outside image"
        );
        let i = (y as usize * self.width as usize + x as usize) * 3;
        [self.rgb[i], self.rgb[i + 1], self.rgb[i + 2]]
    }
}

/// Renders a whole `width × height` image (see [`render_rows`]).
pub fn render(scene: &Scene, width: u32, height: u32) -> Image {
    Image {
        width,
        height,
        rgb: render_rows(scene, width, height, 0, height),
    }
}

/// The image as a binary PPM (`P6`) file.
pub fn encode_ppm(image: &Image) -> Vec<u8> {
    let mut out = format!("P6\n{} {}\n255\n", image.width, image.height).into_bytes();
    out.extend_from_slice(&image.rgb);
    out
}

/// Writes the image as a binary PPM (`P6`) file.
pub fn write_ppm(path: impl AsRef<Path>, image: &Image) -> io::Result<()> {
    let mut f = BufWriter::new(File::create(path)?);
    f.write_all(&encode_ppm(image))?;
    f.flush()
}

/// Writes the image as an 8-bit RGB PNG file.
pub fn write_png(path: impl AsRef<Path>, image: &Image) -> io::Result<()> {
    let file = BufWriter::new(File::create(path)?);
    let mut encoder = png::Encoder::new(file, image.width, image.height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().map_err(io::Error::other)?;
    writer
        .write_image_data(&image.rgb)
        .map_err(io::Error::other)?;
    writer.finish().map_err(io::Error::other)
}

/// Order-dependent FNV-1a (64-bit) checksum over a sequence of images:
/// for each image its width and height (little-endian `u32`) and its bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Checksum {
    state: u64,
}

impl Default for Checksum {
    fn default() -> Self {
        Self::new()
    }
}

impl Checksum {
    const OFFSET: u64 = 0xCBF2_9CE4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01B3;

    /// The checksum of no images.
    pub fn new() -> Self {
        Self {
            state: Self::OFFSET,
        }
    }

    fn bytes(&mut self, data: &[u8]) {
        for &b in data {
            self.state = (self.state ^ u64::from(b)).wrapping_mul(Self::PRIME);
        }
    }

    /// Folds in the next image (images must be added in scene order).
    pub fn add(&mut self, image: &Image) {
        self.bytes(&image.width.to_le_bytes());
        self.bytes(&image.height.to_le_bytes());
        self.bytes(&image.rgb);
    }

    /// The current checksum value.
    pub fn value(&self) -> u64 {
        self.state
    }
}

/// [`Checksum`] of `images`, in the given (scene) order.
pub fn checksum(images: &[Image]) -> u64 {
    let mut c = Checksum::new();
    for image in images {
        c.add(image);
    }
    c.value()
}

/// Sequential reference: renders scenes `0 .. scenes` at `width × height`
/// and returns the images in scene order.
pub fn render_all(scenes: u32, width: u32, height: u32) -> Vec<Image> {
    (0..scenes)
        .map(|i| render(&scene(i), width, height))
        .collect()
}

#[cfg(test)]
mod tests;
