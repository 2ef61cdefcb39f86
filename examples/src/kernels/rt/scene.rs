//! Scene description and the indexed scene generator.

use super::math::{Ray, Vec3};
use crate::kernels::SplitMix64;

/// Surface appearance.
#[derive(Clone, Debug, PartialEq)]
pub struct Material {
    /// Base (diffuse) colour.
    pub color: Vec3,
    /// Optional checkerboard: second colour and square size; the pattern
    /// uses the world x and z coordinates (meant for horizontal planes).
    pub checker: Option<(Vec3, f64)>,
    /// Diffuse (Lambert) coefficient.
    pub diffuse: f64,
    /// Specular (Phong) coefficient.
    pub specular: f64,
    /// Phong exponent.
    pub shininess: i32,
    /// Fraction of the colour taken from the mirror reflection, `0..=1`.
    pub reflectivity: f64,
}

impl Material {
    /// A plain matte material of the given colour.
    pub fn matte(color: Vec3) -> Self {
        Self {
            color,
            checker: None,
            diffuse: 0.9,
            specular: 0.0,
            shininess: 1,
            reflectivity: 0.0,
        }
    }

    /// The surface colour at point `p`.
    #[inline]
    pub fn color_at(&self, p: Vec3) -> Vec3 {
        match self.checker {
            Some((other, size)) => {
                let parity = ((p.x / size).floor() as i64 + (p.z / size).floor() as i64) & 1;
                if parity == 0 {
                    self.color
                } else {
                    other
                }
            }
            None => self.color,
        }
    }
}

/// A sphere.
#[derive(Clone, Debug, PartialEq)]
pub struct Sphere {
    /// Centre.
    pub center: Vec3,
    /// Radius (> 0).
    pub radius: f64,
    /// Appearance.
    pub material: Material,
}

impl Sphere {
    /// Smallest hit parameter `t > t_min` of `ray`, if any.
    #[inline]
    pub fn intersect(&self, ray: &Ray, t_min: f64) -> Option<f64> {
        let oc = ray.origin - self.center;
        let b = oc.dot(ray.dir);
        let c = oc.dot(oc) - self.radius * self.radius;
        let disc = b * b - c;
        if disc < 0.0 {
            return None;
        }
        let sq = disc.sqrt();
        let t = -b - sq;
        if t > t_min {
            return Some(t);
        }
        let t = -b + sq;
        (t > t_min).then_some(t)
    }
}

/// An infinite plane.
#[derive(Clone, Debug, PartialEq)]
pub struct Plane {
    /// Any point of the plane.
    pub point: Vec3,
    /// Unit normal.
    pub normal: Vec3,
    /// Appearance.
    pub material: Material,
}

impl Plane {
    /// Hit parameter `t > t_min` of `ray`, if any.
    #[inline]
    pub fn intersect(&self, ray: &Ray, t_min: f64) -> Option<f64> {
        let denom = self.normal.dot(ray.dir);
        if denom.abs() < 1e-12 {
            return None;
        }
        let t = (self.point - ray.origin).dot(self.normal) / denom;
        (t > t_min).then_some(t)
    }
}

/// A point light (casts hard shadows).
#[derive(Clone, Debug, PartialEq)]
pub struct Light {
    /// Position.
    pub position: Vec3,
    /// Colour times intensity.
    pub color: Vec3,
}

/// A pinhole camera.
#[derive(Clone, Debug, PartialEq)]
pub struct Camera {
    /// Eye position.
    pub eye: Vec3,
    /// Point looked at.
    pub target: Vec3,
    /// Approximate up direction.
    pub up: Vec3,
    /// Vertical field of view in degrees.
    pub fov_deg: f64,
}

/// Everything needed to render an image.
#[derive(Clone, Debug, PartialEq)]
pub struct Scene {
    /// The camera.
    pub camera: Camera,
    /// Spheres.
    pub spheres: Vec<Sphere>,
    /// Planes.
    pub planes: Vec<Plane>,
    /// Point lights.
    pub lights: Vec<Light>,
    /// Ambient light level (multiplies the surface colour).
    pub ambient: f64,
    /// Sky colour at the horizon; the sky darkens towards the zenith.
    pub background: Vec3,
    /// Maximum number of reflection bounces.
    pub max_depth: u32,
}

/// Number of spheres of [`scene`]`(index)`: 4 to 24, varying with the index
/// so that scenes differ in cost.
pub fn sphere_count(index: u32) -> usize {
    let mut rng = SplitMix64::from_keys(&[0x5C3E_5C3E, u64::from(index), 1]);
    4 + rng.range_u32(0, 20) as usize
}

/// The benchmark scene number `index`: a checkered floor, 4 to 24 spheres
/// (some reflective) and 1 to 3 point lights, viewed from a camera that
/// orbits the scene as the index grows. Fully determined by `index`.
pub fn scene(index: u32) -> Scene {
    let n_spheres = sphere_count(index);
    let mut rng = SplitMix64::from_keys(&[0x5C3E_5C3E, u64::from(index), 2]);

    let angle = f64::from(index) * 2.399_963_229_728_653; // golden angle
    let dist = 9.0 + 2.0 * rng.next_f64();
    let camera = Camera {
        eye: Vec3::new(
            dist * angle.cos(),
            2.5 + 2.0 * rng.next_f64(),
            dist * angle.sin(),
        ),
        target: Vec3::new(0.0, 0.8, 0.0),
        up: Vec3::new(0.0, 1.0, 0.0),
        fov_deg: 50.0,
    };

    let floor = Plane {
        point: Vec3::ZERO,
        normal: Vec3::new(0.0, 1.0, 0.0),
        material: Material {
            color: Vec3::splat(0.9),
            checker: Some((Vec3::new(0.15, 0.15, 0.2), 1.0)),
            diffuse: 0.8,
            specular: 0.1,
            shininess: 8,
            reflectivity: 0.2,
        },
    };

    let mut spheres: Vec<Sphere> = Vec::with_capacity(n_spheres);
    for _ in 0..n_spheres {
        // Rejection sampling for non-overlapping spheres; a bounded number
        // of attempts keeps the generator deterministic and finite.
        let mut candidate = None;
        for _ in 0..32 {
            let radius = 0.3 + 0.7 * rng.next_f64();
            let floating = rng.next_f64() < 0.25;
            let y = if floating {
                radius + 0.5 + 1.5 * rng.next_f64()
            } else {
                radius
            };
            let center = Vec3::new(-4.5 + 9.0 * rng.next_f64(), y, -4.5 + 9.0 * rng.next_f64());
            if spheres
                .iter()
                .all(|s| (s.center - center).length() > s.radius + radius + 0.05)
            {
                candidate = Some((center, radius));
                break;
            }
        }
        let Some((center, radius)) = candidate else {
            continue;
        };
        let color = Vec3::new(
            0.2 + 0.8 * rng.next_f64(),
            0.2 + 0.8 * rng.next_f64(),
            0.2 + 0.8 * rng.next_f64(),
        );
        let mirror = rng.next_f64() < 0.3;
        spheres.push(Sphere {
            center,
            radius,
            material: Material {
                color,
                checker: None,
                diffuse: if mirror { 0.3 } else { 0.8 },
                specular: 0.5,
                shininess: [8, 16, 32, 64][rng.range_u32(0, 3) as usize],
                reflectivity: if mirror {
                    0.6 + 0.3 * rng.next_f64()
                } else {
                    0.1 * rng.next_f64()
                },
            },
        });
    }

    let n_lights = 1 + rng.range_u32(0, 2) as usize;
    let lights = (0..n_lights)
        .map(|_| {
            let a = rng.next_f64() * std::f64::consts::TAU;
            Light {
                position: Vec3::new(7.0 * a.cos(), 6.0 + 4.0 * rng.next_f64(), 7.0 * a.sin()),
                color: Vec3::splat(1.0 / n_lights as f64 + 0.2),
            }
        })
        .collect();

    Scene {
        camera,
        spheres,
        planes: vec![floor],
        lights,
        ambient: 0.08,
        background: Vec3::new(0.55, 0.7, 0.9),
        max_depth: 4,
    }
}
