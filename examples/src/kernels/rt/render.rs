//! Ray casting, shading and row rendering.

use super::math::{Ray, Vec3};
use super::scene::{Material, Scene};

/// Hits closer than this are ignored (self-intersection guard).
const T_MIN: f64 = 1e-9;
/// Secondary rays start this far off the surface, along the normal.
const SURFACE_OFFSET: f64 = 1e-7;

/// The closest surface hit by a ray.
struct Hit<'a> {
    t: f64,
    point: Vec3,
    /// Unit normal facing the incoming ray.
    normal: Vec3,
    material: &'a Material,
}

fn closest_hit<'a>(scene: &'a Scene, ray: &Ray) -> Option<Hit<'a>> {
    let mut best: Option<(f64, Vec3, &Material)> = None;
    for s in &scene.spheres {
        if let Some(t) = s.intersect(ray, T_MIN) {
            if best.as_ref().is_none_or(|b| t < b.0) {
                let n = (ray.at(t) - s.center) * (1.0 / s.radius);
                best = Some((t, n, &s.material));
            }
        }
    }
    for p in &scene.planes {
        if let Some(t) = p.intersect(ray, T_MIN) {
            if best.as_ref().is_none_or(|b| t < b.0) {
                best = Some((t, p.normal, &p.material));
            }
        }
    }
    best.map(|(t, n, material)| {
        let normal = if n.dot(ray.dir) > 0.0 { -n } else { n };
        Hit {
            t,
            point: ray.at(t),
            normal,
            material,
        }
    })
}

/// Whether anything blocks the segment from `ray.origin` to distance `dist`.
fn occluded(scene: &Scene, ray: &Ray, dist: f64) -> bool {
    scene
        .spheres
        .iter()
        .any(|s| s.intersect(ray, T_MIN).is_some_and(|t| t < dist))
        || scene
            .planes
            .iter()
            .any(|p| p.intersect(ray, T_MIN).is_some_and(|t| t < dist))
}

/// Sky colour for a ray that hits nothing.
fn sky(scene: &Scene, dir: Vec3) -> Vec3 {
    let up = dir.y.clamp(0.0, 1.0);
    scene.background * (1.0 - 0.5 * up)
}

/// Colour seen along `ray`, following at most `depth` more reflections.
pub(super) fn trace(scene: &Scene, ray: &Ray, depth: u32) -> Vec3 {
    let Some(hit) = closest_hit(scene, ray) else {
        return sky(scene, ray.dir);
    };
    debug_assert!(hit.t > 0.0);
    let m = hit.material;
    let base = m.color_at(hit.point);
    let origin = hit.point + hit.normal * SURFACE_OFFSET;
    let mut color = base * scene.ambient;
    for light in &scene.lights {
        let to_light = light.position - origin;
        let dist = to_light.length();
        let ldir = to_light * (1.0 / dist);
        let lambert = hit.normal.dot(ldir);
        if lambert <= 0.0 {
            continue;
        }
        let shadow_ray = Ray { origin, dir: ldir };
        if occluded(scene, &shadow_ray, dist) {
            continue;
        }
        color += base.hadamard(light.color) * (m.diffuse * lambert);
        if m.specular > 0.0 {
            let r = (-ldir).reflect(hit.normal);
            let s = r.dot(-ray.dir);
            if s > 0.0 {
                color += light.color * (m.specular * s.powi(m.shininess));
            }
        }
    }
    if m.reflectivity > 0.0 && depth > 0 {
        let refl = Ray {
            origin,
            dir: ray.dir.reflect(hit.normal),
        };
        let rc = trace(scene, &refl, depth - 1);
        color = color * (1.0 - m.reflectivity) + rc * m.reflectivity;
    }
    color
}

/// Camera frame: eye, right, up and forward unit vectors scaled by the
/// field of view.
struct View {
    eye: Vec3,
    right: Vec3,
    up: Vec3,
    forward: Vec3,
}

impl View {
    fn new(scene: &Scene, width: u32, height: u32) -> Self {
        let c = &scene.camera;
        let forward = (c.target - c.eye).normalized();
        let right = forward.cross(c.up).normalized();
        let up = right.cross(forward);
        let half_h = (c.fov_deg.to_radians() * 0.5).tan();
        let half_w = half_h * f64::from(width) / f64::from(height);
        Self {
            eye: c.eye,
            right: right * half_w,
            up: up * half_h,
            forward,
        }
    }

    /// Primary ray through the centre of pixel `(x, y)`; `y = 0` is the top
    /// row.
    fn ray(&self, width: u32, height: u32, x: u32, y: u32) -> Ray {
        let px = 2.0 * (f64::from(x) + 0.5) / f64::from(width) - 1.0;
        let py = 1.0 - 2.0 * (f64::from(y) + 0.5) / f64::from(height);
        Ray::new(self.eye, self.forward + self.right * px + self.up * py)
    }
}

/// The primary ray through pixel `(x, y)` of a `width × height` image.
pub fn primary_ray(scene: &Scene, width: u32, height: u32, x: u32, y: u32) -> Ray {
    View::new(scene, width, height).ray(width, height, x, y)
}

/// Converts a colour channel to 8 bits (clamped, rounded).
#[inline]
fn to_u8(c: f64) -> u8 {
    (c.clamp(0.0, 1.0) * 255.0 + 0.5) as u8
}

/// Renders rows `y0 .. y1` of a `width × height` image as packed RGB8
/// (`(y1 - y0) · width · 3` bytes, top row first). Rendering the rows of an
/// image in any pieces and concatenating them gives exactly [`render`](fn@super::render)'s
/// bytes.
///
/// # Panics
/// If `y0 > y1`, `y1 > height`, or `width` or `height` is 0.
pub fn render_rows(scene: &Scene, width: u32, height: u32, y0: u32, y1: u32) -> Vec<u8> {
    assert!(width > 0 && height > 0, "empty image {width}x{height}");
    assert!(
        y0 <= y1 && y1 <= height,
        "bad row range {y0}..{y1} of {height}"
    );
    let view = View::new(scene, width, height);
    let mut out = Vec::with_capacity((y1 - y0) as usize * width as usize * 3);
    for y in y0..y1 {
        for x in 0..width {
            let c = trace(scene, &view.ray(width, height, x, y), scene.max_depth);
            out.extend_from_slice(&[to_u8(c.x), to_u8(c.y), to_u8(c.z)]);
        }
    }
    out
}
